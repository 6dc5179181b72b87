"""The webhook notifier against a real HTTP server on 127.0.0.1, and `deliver` routing."""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from alerts.model import Alert, alerts_from_episodes
from alerts.notify import DeliveryReport, NotifierRegistry, default_notifiers, deliver
from alerts.webhook import SIGNATURE_HEADER, WebhookNotifier, redact
from gpusteward.clock import FakeClock
from gpusteward.errors import PermanentError, TransientError
from tests.alerts.helpers import config, episodes

SECRET = "s3cret-value-never-printed"
SENT_AT = datetime(2026, 10, 3, 12, 0, 7, tzinfo=UTC)


@dataclass
class Receiver:
    """What the server saw, and what it should answer next."""

    status: int = 200
    delay_s: float = 0.0
    bodies: list[bytes] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)
    url: str = ""


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    state = Receiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            state.bodies.append(body)
            state.headers.append({k.lower(): v for k, v in self.headers.items()})
            time.sleep(state.delay_s)
            try:
                self.send_response(state.status)
                self.send_header("Content-Length", "0")
                self.end_headers()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (the timeout test): nothing to answer

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}/hook?token=abc"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def _alerts() -> list[Alert]:
    return alerts_from_episodes(episodes({}, {"subject": "west"}), config())


def test_posts_alertmanager_body_with_verifiable_signature(receiver: Receiver) -> None:
    notifier = WebhookNotifier("ops", receiver.url, secret=SECRET, timeout_s=5, clock=FakeClock(SENT_AT))
    assert notifier.send(_alerts()) == 2
    (raw,) = receiver.bodies
    body = json.loads(raw)
    assert body["version"] == "4"
    assert body["status"] == "resolved"
    assert body["receiver"] == "ops"
    assert body["groupLabels"] == {"alertname": "InferenceReserveBreach"}
    assert body["commonLabels"] == {"alertname": "InferenceReserveBreach", "line": "inference_reserve",
                                    "severity": "critical"}
    assert body["groupKey"] == '{}:{alertname="InferenceReserveBreach"}'
    assert [a["labels"]["cluster"] for a in body["alerts"]] == ["east", "west"]
    assert {"receiver", "status", "alerts", "groupLabels", "commonLabels", "commonAnnotations", "externalURL",
            "version", "groupKey", "truncatedAlerts"} == set(body)
    headers = receiver.headers[0]
    assert headers["content-type"] == "application/json"
    stamp = int(SENT_AT.timestamp())
    expected = f"t={stamp},v1=" + hmac.new(SECRET.encode(), f"{stamp}.".encode() + raw, hashlib.sha256).hexdigest()
    assert hmac.compare_digest(headers[SIGNATURE_HEADER.lower()], expected)


def test_unsigned_without_secret(receiver: Receiver) -> None:
    WebhookNotifier("ops", receiver.url, timeout_s=5).send(_alerts())
    assert SIGNATURE_HEADER.lower() not in receiver.headers[0]


def test_server_error_is_transient_and_hides_secrets(receiver: Receiver) -> None:
    receiver.status = 500
    notifier = WebhookNotifier("ops", receiver.url, secret=SECRET, timeout_s=5)
    with pytest.raises(TransientError) as info:
        notifier.send(_alerts())
    message = str(info.value)
    assert "answered 500" in message
    assert SECRET not in message
    assert "token=abc" not in message
    assert SECRET not in repr(notifier)


def test_client_error_is_permanent(receiver: Receiver) -> None:
    receiver.status = 403
    with pytest.raises(PermanentError, match="answered 403"):
        WebhookNotifier("ops", receiver.url, timeout_s=5).send(_alerts())


def test_timeout_is_transient(receiver: Receiver) -> None:
    receiver.delay_s = 1.0
    with pytest.raises(TransientError, match="timed out") as info:
        WebhookNotifier("ops", receiver.url, secret=SECRET, timeout_s=0.2).send(_alerts())
    assert info.value.__cause__ is None  # httpx's message, which names the full URL, is not chained


def test_connection_refused_is_transient() -> None:
    with pytest.raises(TransientError, match="failed"):
        WebhookNotifier("ops", "http://127.0.0.1:9/hook", timeout_s=1).send(_alerts())


def test_redact_drops_credentials_and_query() -> None:
    assert redact("https://user:pw@example.org:8443/a/b?token=x") == "https://example.org:8443/a/b"


RECEIVERS = """
[[alerts.receivers]]
name = "hook"
kind = "webhook"
url = "URL"
secret_env = "GPUSTEWARD_TEST_SECRET"

[[alerts.receivers]]
name = "file"
kind = "jsonl"
path = "alerts.jsonl"
"""


def test_deliver_from_config_routes_and_reports(receiver: Receiver, tmp_path: Path) -> None:
    cfg = dataclasses.replace(config(RECEIVERS.replace("URL", receiver.url), '["hook"]'), base_dir=str(tmp_path))
    alerts = alerts_from_episodes(episodes({}), cfg)
    report = deliver(alerts, cfg, env={"GPUSTEWARD_TEST_SECRET": SECRET})
    assert report.ok
    assert [(o.receiver, o.alerts, o.sent) for o in report.outcomes] == [("hook", 1, 1), ("file", 0, 0)]
    assert not (tmp_path / "alerts.jsonl").exists()  # the line routes to "hook" only
    assert receiver.headers[0][SIGNATURE_HEADER.lower()].startswith("t=")


def test_deliver_reports_failures_without_raising(receiver: Receiver, tmp_path: Path) -> None:
    receiver.status = 503
    cfg = dataclasses.replace(config(RECEIVERS.replace("URL", receiver.url)), base_dir=str(tmp_path))
    alerts = alerts_from_episodes(episodes({}), cfg)
    report: DeliveryReport = deliver(alerts, cfg, env={"GPUSTEWARD_TEST_SECRET": SECRET})
    assert not report.ok
    (failed,) = report.failed
    assert (failed.receiver, failed.retry) == ("hook", True)
    assert report.sent == 1  # the JSONL receiver still got it
    missing = deliver(alerts, cfg, env={})
    (broken,) = missing.failed
    assert broken.retry is False
    assert "GPUSTEWARD_TEST_SECRET" in (broken.error or "")
    assert SECRET not in (broken.error or "")


def test_notifier_kinds_register_like_add_ons() -> None:
    registry = default_notifiers()
    assert registry.kinds() == ["jsonl", "webhook", "alertmanager", "slack", "feishu", "dingtalk", "wecom"]
    with pytest.raises(ValueError, match="already registered"):
        registry.register("jsonl", lambda r, c, e: WebhookNotifier(r.name, "http://x"))
    assert NotifierRegistry().kinds() == []
