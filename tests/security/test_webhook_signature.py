"""Webhook signatures verify: a receiver holding the secret can check every POST it gets, over the exact
bytes sent and the time they were signed (alerts/webhook_signature.py; replay tests in
tests/alerts/test_webhook_replay.py)."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime

import httpx
import pytest

from alerts.model import Alert
from alerts.webhook import SIGNATURE_HEADER, WebhookNotifier, sign
from gpusteward.clock import FakeClock

SECRET = "whsec-sig-test-5f1d"
NOW = datetime(2026, 10, 3, 12, tzinfo=UTC)
STAMP = int(NOW.timestamp())


def _verify(secret: str, body: bytes, header: str) -> bool:
    """What a receiver does, written here apart from the product's code: recompute the HMAC over the
    signed time and the raw bytes, compare in constant time."""
    parts = dict(item.split("=", 1) for item in header.split(",") if not item.startswith("v1="))
    offered = [item.removeprefix("v1=") for item in header.split(",") if item.startswith("v1=")]
    expected = hmac.new(secret.encode(), f"{parts['t']}.".encode() + body, hashlib.sha256).hexdigest()
    return any(hmac.compare_digest(expected, v) for v in offered)


def _alert() -> Alert:
    return Alert(
        fingerprint="0123456789abcdef",
        status="firing",
        labels={"alertname": "InferenceReserve", "severity": "critical", "subject": "east", "line": "reserve"},
        annotations={"summary": "reserve below 12 GPUs"},
        starts_at=NOW,
        ends_at=None,
        receivers=(),
    )


def test_sign_matches_an_independent_hmac() -> None:
    body = b'{"alerts": []}'
    assert _verify(SECRET, body, sign([SECRET], body, STAMP))
    assert not _verify("another-secret", body, sign([SECRET], body, STAMP))
    assert not _verify(SECRET, body + b" ", sign([SECRET], body, STAMP))
    moved = sign([SECRET], body, STAMP).replace(f"t={STAMP}", f"t={STAMP + 600}")
    assert not _verify(SECRET, body, moved)  # the time is signed: it cannot be moved forward


@pytest.mark.parametrize("secret", [SECRET, "ünïcode-sëcret", "x" * 200])
def test_every_post_carries_a_signature_over_the_exact_bytes_sent(secret: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200)

    transport = httpx.MockTransport(handler)
    notifier = WebhookNotifier("ops", "http://receiver.test/hook", secret=secret, transport=transport,
                               clock=FakeClock(NOW))
    notifier.send([_alert()])
    assert seen
    for request in seen:
        body = request.read()
        assert request.headers[SIGNATURE_HEADER].startswith(f"t={STAMP},v1=")
        assert _verify(secret, body, request.headers[SIGNATURE_HEADER])
        tampered = body.replace(b"firing", b"resolve")
        assert not _verify(secret, tampered, request.headers[SIGNATURE_HEADER])
    assert secret not in repr(notifier)
