"""Webhook signatures a captured delivery cannot be replayed with: the timestamp is signed with the body.

The scheme Stripe and Slack use. Every signed delivery carries one header:

    X-GPUSteward-Signature: t=1793534400,v1=5257a869...,v1=9f86d081...

`t` is the sender's clock in Unix seconds; each `v1` is the hex HMAC-SHA256, keyed with one secret,
of the bytes `f"{t}."` followed by the exact body bytes. While a secret is rotated the sender
signs with the current and the previous secret (one `v1` each), so a receiver still holding the
old one keeps verifying until it is given the new one, and a receiver can hold both.

A receiver (1) recomputes the HMAC over the raw body, never a re-serialised one, (2) accepts when
any `v1` matches any of its secrets, compared in constant time, (3) refuses a `t` more than the
tolerance (default 5 minutes) from its own clock, so a captured delivery replayed later fails,
and (4) with `ReplayGuard`, refuses a delivery it already took inside that window.

This module needs only the standard library, so a receiver written in Python can copy it whole
(docs/alerts.md has the same check in a few lines).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

SIGNATURE_HEADER = "X-GPUSteward-Signature"
SCHEME = "v1"
TOLERANCE_S = 300  # 5 minutes, as Stripe's and Slack's receivers default to


class SignatureError(ValueError):
    """The delivery is refused; the message says why (never a secret)."""


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """hex HMAC-SHA256(secret, "<timestamp>." + body)."""
    return hmac.new(secret.encode("utf-8"), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()


def sign(secrets: Sequence[str], body: bytes, timestamp: int) -> str:
    """The header value: `t=<timestamp>` and one `v1=` per secret (current first)."""
    if not secrets:
        raise ValueError("signing needs at least one secret")
    return ",".join([f"t={timestamp}", *(f"{SCHEME}={signature(s, timestamp, body)}" for s in secrets)])


def _parse(header: str) -> tuple[int, list[str]]:
    stamps: list[str] = []
    signatures: list[str] = []
    for item in header.split(","):
        key, sep, value = item.strip().partition("=")
        if not sep:
            raise SignatureError(f"malformed signature header: {item.strip()[:40]!r} is not key=value")
        if key == "t":
            stamps.append(value)
        elif key == SCHEME:
            signatures.append(value)
    if len(stamps) != 1 or not (stamps[0].isascii() and stamps[0].isdigit()) or len(stamps[0]) > 12:
        raise SignatureError("the signature header needs exactly one t=<unix seconds>")
    if not signatures:
        raise SignatureError(f"the signature header has no {SCHEME}= signature")
    return int(stamps[0]), signatures


def verify(
    header: str | None, body: bytes, secrets: Sequence[str], *, now: float, tolerance_s: float = TOLERANCE_S
) -> int:
    """Check a delivery; its signed timestamp when it is genuine and fresh, else SignatureError.

    `now`: the receiver's clock in Unix seconds (time.time()); `secrets`: the current and, while
    rotating, the previous one."""
    if not header:
        raise SignatureError(f"unsigned delivery: no {SIGNATURE_HEADER} header")
    if not secrets:
        raise ValueError("verifying needs at least one secret")
    timestamp, offered = _parse(header)
    if abs(now - timestamp) > tolerance_s:
        raise SignatureError(
            f"stale delivery: signed at t={timestamp}, {now - timestamp:+.0f} s from this receiver's clock "
            f"(tolerance {tolerance_s:g} s); a replay, or a clock that drifted"
        )
    expected = [signature(secret, timestamp, body) for secret in secrets]
    matched = False
    for candidate in offered:  # every pair compared: no timing hint of which one matched
        for wanted in expected:
            matched |= hmac.compare_digest(candidate.encode(), wanted.encode())
    if not matched:
        raise SignatureError("bad signature: no v1 matches this receiver's secrets over the raw body")
    return timestamp


class ReplayGuard:
    """`verify`, and refuse a delivery already taken inside the tolerance window (same t and body)."""

    def __init__(self, tolerance_s: float = TOLERANCE_S) -> None:
        self.tolerance_s = tolerance_s
        self._seen: dict[str, int] = {}  # sha256 of t and body -> t

    def check(self, header: str | None, body: bytes, secrets: Sequence[str], *, now: float) -> int:
        timestamp = verify(header, body, secrets, now=now, tolerance_s=self.tolerance_s)
        self._seen = {k: t for k, t in self._seen.items() if abs(now - t) <= self.tolerance_s}
        key = hashlib.sha256(f"{timestamp}.".encode() + body).hexdigest()
        if key in self._seen:
            raise SignatureError(f"replayed delivery: signed at t={timestamp} and already received")
        self._seen[key] = timestamp
        return timestamp
