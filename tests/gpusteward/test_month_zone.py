"""A review month in the pool's time zone: its instants, its length across DST, and its days."""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusteward.config import load_config_text
from gpusteward.domain import Month
from sla.daily import daily_usage
from tests.sla.builders import BASE_TOML, inputs, job

ZONES = ("UTC", "Asia/Shanghai", "America/New_York", "Europe/Berlin", "Australia/Sydney", "Asia/Kolkata")


def test_october_in_shanghai_runs_from_the_last_day_of_september_utc() -> None:
    october = Month(2026, 10, "Asia/Shanghai")
    assert october.start == datetime(2026, 9, 30, 16, 0, tzinfo=UTC)
    assert october.end == datetime(2026, 10, 31, 16, 0, tzinfo=UTC)
    assert october.minutes == 31 * 24 * 60
    assert Month(2026, 10) == october  # the zone says where the month begins, not which month it is


@pytest.mark.parametrize(
    ("month", "hours"),
    [
        (Month(2027, 3, "America/New_York"), 743),  # clocks spring forward on 14 March 2027
        (Month(2026, 11, "America/New_York"), 721),  # and fall back on 1 November 2026
        (Month(2006, 10, "America/New_York"), 745),  # before 2007 they fell back on the last Sunday of October
        (Month(2027, 3, "UTC"), 744),
    ],
)
def test_a_month_across_a_dst_change_has_an_hour_more_or_less(month: Month, hours: int) -> None:
    assert month.minutes == hours * 60


@given(
    year=st.integers(min_value=1990, max_value=2060),
    month=st.integers(min_value=1, max_value=12),
    zone=st.sampled_from(ZONES),
)
def test_months_tile_time_and_begin_at_local_midnight(year: int, month: int, zone: str) -> None:
    this = Month(year, month, zone)
    local = this.start.astimezone(ZoneInfo(zone))
    assert (local.year, local.month, local.day, local.hour, local.minute) == (year, month, 1, 0, 0)
    assert this.end == this.next().start
    assert this.previous().end == this.start
    days = (date(year + month // 12, month % 12 + 1, 1) - date(year, month, 1)).days
    # A month differs from its days x 24 hours by at most the DST shift (an hour; Lord Howe's half-hour aside).
    assert abs(this.minutes - days * 24 * 60) <= 60
    assert Month.of(this.start, zone) == this
    assert Month.of(this.end - timedelta(microseconds=1), zone) == this


def test_month_of_a_moment_reads_its_local_date() -> None:
    moment = datetime(2026, 10, 31, 17, 0, tzinfo=UTC)  # 1 November 01:00 in Shanghai
    assert Month.of(moment) == Month(2026, 10)
    assert Month.of(moment, "Asia/Shanghai") == Month(2026, 11)


def _usage_by_day(zone: str, month: Month, start: datetime, end: datetime) -> dict[date, float]:
    config = load_config_text(f'timezone = "{zone}"\n' + BASE_TOML.replace("TZ", zone), source="<test>")
    record = dict(job(1), start_time=start, end_time=end, submit_time=start, eligible_time=start)
    out = daily_usage(inputs(jobs=[record], month=month), config)
    return dict(zip(out["day"].to_list(), out["gpu_hours"].to_list(), strict=True))


def test_days_are_split_at_local_midnight_and_a_dst_day_has_23_hours() -> None:
    # 13 March 2027 12:00 EST to 15 March 12:00 EDT, one GPU: 12 + 23 + 12 hours.
    by_day = _usage_by_day(
        "America/New_York", Month(2027, 3, "America/New_York"),
        datetime(2027, 3, 13, 17, 0), datetime(2027, 3, 15, 16, 0),
    )
    assert by_day == {
        date(2027, 3, 13): pytest.approx(12.0),
        date(2027, 3, 14): pytest.approx(23.0),
        date(2027, 3, 15): pytest.approx(12.0),
    }


def test_a_shanghai_day_ends_at_16_utc() -> None:
    by_day = _usage_by_day(
        "Asia/Shanghai", Month(2026, 10, "Asia/Shanghai"), datetime(2026, 10, 1, 12, 0), datetime(2026, 10, 1, 20, 0)
    )
    assert by_day == {date(2026, 10, 1): pytest.approx(4.0), date(2026, 10, 2): pytest.approx(4.0)}


def test_the_first_hours_of_a_local_month_belong_to_it() -> None:
    # 30 September 18:00 UTC is 1 October 02:00 in Shanghai: in the October review, not before it.
    by_day = _usage_by_day(
        "Asia/Shanghai", Month(2026, 10, "Asia/Shanghai"), datetime(2026, 9, 30, 18, 0), datetime(2026, 9, 30, 20, 0)
    )
    assert by_day == {date(2026, 10, 1): pytest.approx(2.0)}
    utc = _usage_by_day("UTC", Month(2026, 10), datetime(2026, 9, 30, 18, 0), datetime(2026, 9, 30, 20, 0))
    assert utc == {}


def test_the_evaluation_window_follows_the_month_zone() -> None:
    from sla.common import window_of

    window = window_of(inputs(month=Month(2026, 10, "Asia/Shanghai")))
    assert (window.start, window.end, window.tz) == (
        datetime(2026, 9, 30, 16, 0), datetime(2026, 10, 31, 16, 0), "Asia/Shanghai"
    )
    assert pl.Series([window.start]).dtype == pl.Datetime("us")
