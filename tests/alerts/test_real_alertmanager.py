"""A planted breach through the engine and the outbox into a real Alertmanager 0.25 (Debian
`prometheus-alertmanager`, on loopback), which routes it to a local webhook: firing, then resolved.

How long that takes is measured by `python -m bench alert_latency`, never here.
"""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from alerts.alertmanager import AlertmanagerNotifier
from alerts.outbox import MemoryOutbox, tick
from gpusteward.config.alerting import AlertEngineConfig
from tests.alerts.helpers import east_reserve_breach
from tests.alerts.server import Recorder, recording_server
from tests.real import require_binary, stop

ENGINE = AlertEngineConfig(group_interval=timedelta(0))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Alertmanager:
    url: str
    hook: Recorder


@pytest.fixture
def alertmanager(tmp_path: Path) -> Iterator[Alertmanager]:
    binary = require_binary("prometheus-alertmanager", package="prometheus-alertmanager")
    with recording_server("/alert") as hook:
        (tmp_path / "alertmanager.yml").write_text(
            f"""route:
  receiver: hook
  group_by: ['alertname', 'cluster']
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
receivers:
  - name: hook
    webhook_configs:
      - url: {hook.url}
        send_resolved: true
""",
            encoding="utf-8",
        )
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = (tmp_path / "alertmanager.log").open("wb")
        proc = subprocess.Popen(
            [binary, f"--config.file={tmp_path / 'alertmanager.yml'}", f"--storage.path={tmp_path / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}", f"--web.external-url={url}", "--cluster.listen-address="],
            stdout=log, stderr=subprocess.STDOUT,
        )
        try:
            _wait(lambda: _ready(url), 15, "Alertmanager to be ready", tmp_path / "alertmanager.log")
            yield Alertmanager(url, hook)
        finally:
            stop(proc, timeout_s=10)
            log.close()


def _ready(url: str) -> bool:
    try:
        return httpx.get(f"{url}/-/ready", timeout=1).status_code == 200
    except httpx.TransportError:
        return False


def _wait(check: Any, timeout_s: float, what: str, log: Path | None = None) -> float:
    """Poll `check` until true; return the seconds it took."""
    start = time.monotonic()
    while time.monotonic() - start < timeout_s:
        if check():
            return time.monotonic() - start
        time.sleep(0.02)
    tail = log.read_text(encoding="utf-8", errors="replace")[-2000:] if log and log.exists() else ""
    pytest.fail(f"timed out after {timeout_s}s waiting for {what}\n{tail}")


def _bodies(hook: Recorder) -> list[dict[str, Any]]:
    return [json.loads(b) for b in hook.bodies]


def test_planted_breach_reaches_a_webhook_behind_alertmanager_and_resolves(
    alertmanager: Alertmanager,
) -> None:
    store = MemoryOutbox()
    notifier = AlertmanagerNotifier("am", alertmanager.url, timeout_s=5)
    firing = east_reserve_breach(still_going=True)

    result = tick(store, datetime.now(UTC), [firing], engine=ENGINE, notifiers={"am": notifier})
    assert result.delivery.delivered == 1, result.delivery.failed
    _wait(lambda: len(alertmanager.hook.bodies) >= 1, 30, "the firing notification")

    (body,) = _bodies(alertmanager.hook)
    assert body["status"] == "firing"
    assert body["groupLabels"] == {"alertname": "InferenceReserveBreach", "cluster": "east"}
    (got,) = body["alerts"]
    assert got["labels"]["episode"] == firing.fingerprint[:16]
    assert got["labels"]["severity"] == "critical"
    assert got["startsAt"] == "2026-10-12T09:00:00Z"
    assert got["endsAt"] == "0001-01-01T00:00:00Z"
    assert "as few as 5 GPUs available, below its reserve of 12" in got["annotations"]["summary"]
    assert got["annotations"]["fallback"].startswith("Pause or preempt low-priority training in east")
    assert "training job 4711" in got["annotations"]["evidence"]

    resolved = east_reserve_breach(still_going=False)
    assert resolved.fingerprint == firing.fingerprint
    result = tick(store, datetime.now(UTC), [resolved], engine=ENGINE, notifiers={"am": notifier})
    assert result.delivery.delivered == 1, result.delivery.failed
    _wait(lambda: len(alertmanager.hook.bodies) >= 2, 30, "the resolved notification")
    last = _bodies(alertmanager.hook)[-1]
    assert last["status"] == "resolved"
    assert last["alerts"][0]["endsAt"] == "2026-10-12T14:00:00Z"
