"""Silences: label matchers with a start and an expiry, as Alertmanager's.

A matcher is `name="value"`, `name!="value"`, `name=~"regex"` or `name!~"regex"` (quotes optional);
regexes match the whole value. A missing label has the value "". Pure: no clock, no storage.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

Op = Literal["=", "!=", "=~", "!~"]
_MATCHER = re.compile(r"^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*(.*?)\s*$")


@dataclass(frozen=True)
class Matcher:
    name: str
    op: Op
    value: str

    def matches(self, labels: Mapping[str, str]) -> bool:
        actual = labels.get(self.name, "")
        if self.op == "=":
            return actual == self.value
        if self.op == "!=":
            return actual != self.value
        found = re.fullmatch(self.value, actual) is not None
        return found if self.op == "=~" else not found

    def __str__(self) -> str:
        return f'{self.name}{self.op}"{self.value}"'


def parse_matcher(text: str) -> Matcher:
    """`cluster="east"` -> Matcher; raise ValueError saying what is wrong."""
    m = _MATCHER.match(text)
    if not m:
        raise ValueError(f'{text!r}: expected name="value", name!="value", name=~"re" or name!~"re"')
    name, op, value = m.group(1), m.group(2), m.group(3)
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        value = value[1:-1]
    if op in ("=~", "!~"):
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"{text!r}: bad regular expression: {exc}") from None
    return Matcher(name, op, value)  # type: ignore[arg-type]  # the pattern only lets the four ops through


def _utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


@dataclass(frozen=True)
class Silence:
    id: str
    matchers: tuple[Matcher, ...]
    starts_at: datetime
    ends_at: datetime
    comment: str = ""
    created_by: str = ""

    def active(self, now: datetime) -> bool:
        return _utc(self.starts_at) <= _utc(now) < _utc(self.ends_at)

    def matches(self, labels: Mapping[str, str]) -> bool:
        return bool(self.matchers) and all(m.matches(labels) for m in self.matchers)


def make_silence(
    matchers: Sequence[str | Matcher],
    starts_at: datetime,
    ends_at: datetime,
    *,
    comment: str = "",
    created_by: str = "",
) -> Silence:
    """A silence whose id derives from its content (the same silence added twice is one)."""
    parsed = tuple(m if isinstance(m, Matcher) else parse_matcher(m) for m in matchers)
    if not parsed:
        raise ValueError("a silence needs at least one matcher (it would silence everything)")
    if _utc(ends_at) <= _utc(starts_at):
        raise ValueError("a silence must end after it starts")
    key = "\x1f".join([*map(str, parsed), _utc(starts_at).isoformat(), _utc(ends_at).isoformat()])
    sid = hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]
    return Silence(sid, parsed, _utc(starts_at), _utc(ends_at), comment, created_by)


FINGERPRINT_LABEL = "__fingerprint__"
"""A pseudo-label the engine adds when matching silences, so a silence can name one alert (as the
control API's do) as well as label sets."""


def silenced_by(labels: Mapping[str, str], silences: Sequence[Silence], now: datetime) -> str | None:
    """The id of the first active silence that matches `labels`, if any."""
    for silence in silences:
        if silence.active(now) and silence.matches(labels):
            return silence.id
    return None
