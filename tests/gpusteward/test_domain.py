from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusteward.attribution import classify_jobs
from gpusteward.config import example_config_path, load_config
from gpusteward.domain import Month
from gpusteward.durations import format_duration, parse_duration


def test_month_bounds_and_navigation() -> None:
    m = Month.parse("2026-12")
    assert m.start == datetime(2026, 12, 1, tzinfo=UTC)
    assert m.end == datetime(2027, 1, 1, tzinfo=UTC)
    assert m.minutes == 31 * 1440
    assert m.previous() == Month(2026, 11)
    assert str(Month.parse("2027-01").previous()) == "2026-12"
    with pytest.raises(ValueError, match="YYYY-MM"):
        Month.parse("2026-13")


@pytest.mark.parametrize(
    ("text", "seconds"), [("250ms", 0.25), ("90s", 90), ("5m", 300), ("1h30m", 5400), ("2d", 172800), ("1w", 604800)]
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text).total_seconds() == seconds


@pytest.mark.parametrize("text", ["fast", "", "5", "m5", "1h 30m", "-5m"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)


@given(st.integers(min_value=0, max_value=10**10))
def test_duration_round_trip(ms: int) -> None:
    delta = timedelta(milliseconds=ms)
    assert parse_duration(format_duration(delta)) == delta


def test_classify_jobs_with_the_example_rules() -> None:
    config = load_config(example_config_path())
    jobs = pl.DataFrame(
        {
            "cluster": ["east", "west", "west", "east"],
            "partition": ["infer", "eval", "train", "mystery"],
            "qos": ["inference", "low", "normal", None],
            "account": ["platform", "speech", "vision", "nobody"],
        }
    )
    out = classify_jobs(config, jobs)
    assert out.select("scenario", "team").rows() == [
        ("online_inference", "platform"),
        ("evaluation", "speech"),
        ("training", "vision"),
        ("unattributed", "unattributed"),
    ]
