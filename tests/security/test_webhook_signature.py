"""Webhook signatures verify: a receiver holding the secret can check every POST it gets."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime

import httpx
import pytest

from alerts.model import Alert
from alerts.webhook import SIGNATURE_HEADER, WebhookNotifier, sign

SECRET = "whsec-sig-test-5f1d"


def _verify(secret: str, body: bytes, header: str) -> bool:
    """What a receiver does: recompute the HMAC over the raw bytes, compare in constant time."""
    expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected, header)


def _alert() -> Alert:
    now = datetime(2026, 10, 3, 12, tzinfo=UTC)
    return Alert(
        fingerprint="0123456789abcdef",
        status="firing",
        labels={"alertname": "InferenceReserve", "severity": "critical", "subject": "east", "line": "reserve"},
        annotations={"summary": "reserve below 12 GPUs"},
        starts_at=now,
        ends_at=None,
        receivers=(),
    )


def test_sign_matches_an_independent_hmac() -> None:
    body = b'{"alerts": []}'
    assert _verify(SECRET, body, sign(SECRET, body))
    assert not _verify("another-secret", body, sign(SECRET, body))
    assert not _verify(SECRET, body + b" ", sign(SECRET, body))


@pytest.mark.parametrize("secret", [SECRET, "ünïcode-sëcret", "x" * 200])
def test_every_post_carries_a_signature_over_the_exact_bytes_sent(secret: str) -> None:
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200)

    transport = httpx.MockTransport(handler)
    notifier = WebhookNotifier("ops", "http://receiver.test/hook", secret=secret, transport=transport)
    notifier.send([_alert()])
    assert seen
    for request in seen:
        body = request.read()
        assert _verify(secret, body, request.headers[SIGNATURE_HEADER])
        tampered = body.replace(b"firing", b"resolve")
        assert not _verify(secret, tampered, request.headers[SIGNATURE_HEADER])
    assert secret not in repr(notifier)
