"""Silence matchers and expiry."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from alerts.silence import Matcher, make_silence, parse_matcher, silenced_by

T0 = datetime(2026, 10, 12, 9, 0, tzinfo=UTC)
LABELS = {"alertname": "InferenceReserveBreach", "cluster": "east", "severity": "critical"}


@pytest.mark.parametrize(
    ("text", "expected", "hit"),
    [
        ('cluster="east"', Matcher("cluster", "=", "east"), True),
        ("cluster!=east", Matcher("cluster", "!=", "east"), False),
        ('severity=~"crit.*|warning"', Matcher("severity", "=~", "crit.*|warning"), True),
        ("severity!~warn", Matcher("severity", "!~", "warn"), True),
        ('team=""', Matcher("team", "=", ""), True),  # a missing label is ""
        ("alertname=~Inference", Matcher("alertname", "=~", "Inference"), False),  # anchored
    ],
)
def test_matchers(text: str, expected: Matcher, hit: bool) -> None:
    parsed = parse_matcher(text)
    assert parsed == expected
    assert parsed.matches(LABELS) is hit


@pytest.mark.parametrize("bad", ["cluster", "=east", "severity=~(", "9x=1"])
def test_bad_matchers_say_why(bad: str) -> None:
    with pytest.raises(ValueError, match=r"expected|regular expression"):
        parse_matcher(bad)


def test_silence_is_active_between_start_and_expiry() -> None:
    s = make_silence(["cluster=east"], T0, T0 + timedelta(hours=2), comment="drain")
    assert silenced_by(LABELS, [s], T0 - timedelta(seconds=1)) is None
    assert silenced_by(LABELS, [s], T0) == s.id
    assert silenced_by(LABELS, [s], T0 + timedelta(hours=2)) is None
    assert silenced_by({**LABELS, "cluster": "west"}, [s], T0) is None
    assert make_silence(["cluster=east"], T0, T0 + timedelta(hours=2)).id == s.id


def test_silence_needs_matchers_and_an_end_after_its_start() -> None:
    with pytest.raises(ValueError, match="at least one matcher"):
        make_silence([], T0, T0 + timedelta(hours=1))
    with pytest.raises(ValueError, match="end after"):
        make_silence(["cluster=east"], T0, T0)
