"""Replay-proof webhooks: a test receiver on 127.0.0.1 verifies every delivery with the product's
`ReplayGuard` (the code docs/alerts.md tells receivers to copy) on a FakeClock, and refuses a
captured delivery sent again, a stale one, a tampered one and one signed with an unknown secret;
while a secret is rotated, receivers holding either secret accept."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from alerts.model import Alert
from alerts.webhook import SIGNATURE_HEADER, WebhookNotifier
from alerts.webhook_signature import ReplayGuard, SignatureError, sign, signature, verify
from gpusteward.clock import FakeClock
from gpusteward.errors import PermanentError
from tests.alerts.server import Recorder, Request, recording_server

NOW = datetime(2026, 10, 3, 12, tzinfo=UTC)
CURRENT = "whsec-current-7a1c"
PREVIOUS = "whsec-previous-22f0"


@dataclass
class VerifyingReceiver:
    """A receiver that answers 204 to a verified delivery and 401 (with the reason) to any other."""

    secrets: Sequence[str]
    clock: FakeClock
    guard: ReplayGuard = field(default_factory=ReplayGuard)
    refused: list[str] = field(default_factory=list)
    recorder: Recorder = field(default_factory=Recorder)

    def judge(self, request: Request) -> tuple[int, bytes]:
        try:
            self.guard.check(request.headers.get(SIGNATURE_HEADER.lower()), request.body, self.secrets,
                             now=self.clock.now().timestamp())
        except SignatureError as exc:
            self.refused.append(str(exc))
            return 401, str(exc).encode()
        return 204, b""

    @property
    def url(self) -> str:
        return self.recorder.url

    @property
    def accepted(self) -> list[bytes]:
        return self.recorder.bodies

    @property
    def captured(self) -> list[tuple[bytes, dict[str, str]]]:
        """What an eavesdropper on the network saw of the deliveries taken."""
        return [(r.body, r.headers) for r in self.recorder.requests]


@contextmanager
def verifying_receiver(secrets: Sequence[str], clock: FakeClock) -> Iterator[VerifyingReceiver]:
    state = VerifyingReceiver(secrets, clock)
    with recording_server(judge=state.judge) as recorder:
        state.recorder = recorder
        yield state


def _alert() -> Alert:
    return Alert(
        fingerprint="0123456789abcdef",
        status="firing",
        labels={"alertname": "InferenceReserve", "severity": "critical", "subject": "east"},
        annotations={"summary": "reserve below 12 GPUs"},
        starts_at=NOW,
        ends_at=None,
        receivers=(),
    )


def _replay(receiver: VerifyingReceiver, body: bytes, headers: dict[str, str]) -> httpx.Response:
    sent = {k: v for k, v in headers.items() if k.lower() not in {"host", "content-length", "connection"}}
    return httpx.post(receiver.url, content=body, headers=sent, timeout=10)


def test_a_captured_delivery_replayed_is_refused_at_once_and_after_the_window() -> None:
    clock = FakeClock(NOW)
    with verifying_receiver([CURRENT], clock) as receiver:
        WebhookNotifier("ops", receiver.url, secret=CURRENT, clock=clock, timeout_s=5).send([_alert()])
        assert len(receiver.accepted) == 1
        body, headers = receiver.captured[0]

        again = _replay(receiver, body, headers)  # inside the window: the guard remembers it
        assert again.status_code == 401
        assert "replayed" in again.text

        clock.advance(timedelta(minutes=5, seconds=1))  # past the window: stale, whatever the guard holds
        late = _replay(receiver, body, headers)
        assert late.status_code == 401
        assert "stale" in late.text
        assert len(receiver.accepted) == 1


def test_a_delivery_re_signed_by_the_sender_later_is_accepted() -> None:
    """A retry from the outbox signs again with its own time: it is a new delivery, not a replay."""
    clock = FakeClock(NOW)
    with verifying_receiver([CURRENT], clock) as receiver:
        notifier = WebhookNotifier("ops", receiver.url, secret=CURRENT, clock=clock, timeout_s=5)
        notifier.send([_alert()])
        clock.advance(timedelta(minutes=30))
        notifier.send([_alert()])
        assert len(receiver.accepted) == 2
        assert receiver.refused == []


def test_tampered_or_foreign_deliveries_are_refused() -> None:
    clock = FakeClock(NOW)
    with verifying_receiver([CURRENT], clock) as receiver:
        with pytest.raises(PermanentError):  # 401 is a refusal the sender cannot fix by retrying
            WebhookNotifier("ops", receiver.url, secret="someone-elses", clock=clock, timeout_s=5).send([_alert()])
        WebhookNotifier("ops", receiver.url, secret=CURRENT, clock=clock, timeout_s=5).send([_alert()])
        body, headers = receiver.captured[-1]
        tampered = _replay(receiver, body.replace(b"firing", b"resolved"), headers)
        assert tampered.status_code == 401
        assert "bad signature" in tampered.text
        unsigned = httpx.post(receiver.url, content=body, timeout=10)
        assert unsigned.status_code == 401
        assert "unsigned" in unsigned.text
        assert len(receiver.accepted) == 1


@pytest.mark.parametrize(
    ("sender_secrets", "receiver_secrets"),
    [
        ((CURRENT, PREVIOUS), [PREVIOUS]),  # the receiver still has the old secret
        ((CURRENT, PREVIOUS), [CURRENT]),  # the receiver already has the new one
        ((PREVIOUS, None), [CURRENT, PREVIOUS]),  # the receiver rotated first; the sender has not yet
    ],
)
def test_two_secrets_are_valid_while_rotating(
    sender_secrets: tuple[str, str | None], receiver_secrets: list[str]
) -> None:
    clock = FakeClock(NOW)
    current, previous = sender_secrets
    with verifying_receiver(receiver_secrets, clock) as receiver:
        notifier = WebhookNotifier("ops", receiver.url, secret=current, previous_secret=previous, clock=clock,
                                   timeout_s=5)
        notifier.send([_alert()])
        assert len(receiver.accepted) == 1, receiver.refused
        header = receiver.captured[0][1][SIGNATURE_HEADER.lower()]
        assert header.count("v1=") == (2 if previous else 1)
        assert CURRENT not in repr(notifier)
        assert PREVIOUS not in repr(notifier)


def test_a_previous_secret_alone_signs_nothing() -> None:
    seen: list[httpx.Request] = []
    transport = _recording_transport(seen)
    WebhookNotifier("ops", "http://x.test/h", previous_secret=PREVIOUS, transport=transport).send([_alert()])
    assert SIGNATURE_HEADER not in seen[0].headers


def _recording_transport(seen: list[httpx.Request]) -> httpx.MockTransport:
    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return httpx.Response(200)

    return httpx.MockTransport(handler)


BODY = b'{"alerts":[]}'
T = int(NOW.timestamp())


@pytest.mark.parametrize(
    ("header", "reason"),
    [
        (None, "unsigned"),
        ("", "unsigned"),
        ("sha256=abc", "exactly one t="),  # the old body-only scheme is refused
        (f"v1={signature(CURRENT, T, BODY)}", "exactly one t="),
        (f"t={T}", "no v1="),
        (f"t={T},t={T},v1={signature(CURRENT, T, BODY)}", "exactly one t="),
        (f"t=-5,v1={signature(CURRENT, T, BODY)}", "exactly one t="),
        (f"t={T},garbage", "malformed"),
        (f"t={T}garbage,v1={signature(CURRENT, T, BODY)}", "exactly one t="),
        (f"t={T},v1=00", "bad signature"),
        (f"t={T - 301},v1={signature(CURRENT, T - 301, BODY)}", "stale"),
        (f"t={T + 301},v1={signature(CURRENT, T + 301, BODY)}", "stale"),  # from the future: a skewed or forged t
    ],
)
def test_verify_refuses_with_a_reason(header: str | None, reason: str) -> None:
    with pytest.raises(SignatureError, match=reason) as refused:
        verify(header, BODY, [CURRENT], now=T)
    assert CURRENT not in str(refused.value)


def test_verify_accepts_inside_the_window_on_both_sides() -> None:
    for skew in (-300, 0, 300):
        assert verify(sign([CURRENT], BODY, T + skew), BODY, [CURRENT], now=T) == T + skew


@given(
    body=st.binary(max_size=200),
    secret=st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=40),
    flip=st.integers(0, 199),
)
def test_any_changed_byte_fails_verification(body: bytes, secret: str, flip: int) -> None:
    header = sign([secret], body, T)
    assert verify(header, body, [secret], now=T) == T
    if body:
        i = flip % len(body)
        changed = body[:i] + bytes([body[i] ^ 0x01]) + body[i + 1 :]
        with pytest.raises(SignatureError):
            verify(header, changed, [secret], now=T)


def _doc_snippet() -> Any:
    """The verification function docs/alerts.md shows receivers, run as written."""
    doc = (Path(__file__).resolve().parents[2] / "docs" / "alerts.md").read_text(encoding="utf-8")
    section = doc.split("### Verifying (Python)", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/alerts.md", "exec"), namespace)
    return namespace["verify"]


def test_the_documented_snippet_verifies_what_the_notifier_sends() -> None:
    doc_verify = _doc_snippet()
    seen: list[httpx.Request] = []
    transport = _recording_transport(seen)
    WebhookNotifier("ops", "http://x.test/h", secret=CURRENT, previous_secret=PREVIOUS, transport=transport,
                    clock=FakeClock(NOW)).send([_alert()])
    header, body = seen[0].headers[SIGNATURE_HEADER], seen[0].read()
    assert doc_verify(header, body, [CURRENT], now=T + 10)
    assert doc_verify(header, body, [PREVIOUS], now=T - 10)
    assert not doc_verify(header, body, ["other"], now=T)
    assert not doc_verify(header, body + b" ", [CURRENT], now=T)
    assert not doc_verify(header, body, [CURRENT], now=T + 301)
