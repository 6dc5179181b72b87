"""A month is the pool's local month: the months with data, the latest month, what the service
evaluates and when the default review is due all follow `timezone`, around a month boundary.

Fixed instants on a FakeClock; the data sits on either side of local midnight of 1 November.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from gpusteward.clock import FakeClock
from gpusteward.config.schema import Config, ReportsConfig
from gpusteward.domain import Month
from reports.schedule import due_runs
from service.pipeline import latest_month
from service.schedule import CronReviewSchedule
from service.tasks import MonthlyReview, months_to_evaluate
from tests.warehouse.conftest import gpu_minutes
from warehouse import Warehouse, open_warehouse

SHANGHAI = "Asia/Shanghai"  # UTC+8: 31 Oct 16:00 UTC is 1 Nov 00:00 local
NEW_YORK = "America/New_York"  # UTC-4 in October: 1 Nov 04:00 UTC is 1 Nov 00:00 local
OCTOBER, NOVEMBER = Month(2026, 10), Month(2026, 11)


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with open_warehouse(tmp_path / "w.duckdb") as w:
        yield w


def _months(wh: Warehouse, tz: str = "UTC") -> list[str]:
    return [str(m) for m in wh.data_months(tz)]


def test_data_at_one_in_the_morning_in_shanghai_is_novembers_there_and_octobers_in_utc(wh: Warehouse) -> None:
    # gpu_minutes counts minutes from 1 Nov 00:00 UTC: -420 is 31 Oct 17:00 UTC, 1 Nov 01:00 in Shanghai
    wh.ingest("a", {"gpu_minutes": gpu_minutes("h1", 1, range(-420, -360))})
    assert _months(wh) == ["2026-10"]
    assert _months(wh, SHANGHAI) == ["2026-11"]
    assert {m.tz for m in wh.data_months(SHANGHAI)} == {SHANGHAI}


def test_data_just_after_midnight_utc_is_still_october_in_new_york(wh: Warehouse) -> None:
    wh.ingest("a", {"gpu_minutes": gpu_minutes("h1", 1, range(60))})  # 1 Nov 00:00-00:59 UTC
    assert _months(wh) == ["2026-11"]
    assert _months(wh, NEW_YORK) == ["2026-10"]


def test_the_latest_month_and_what_the_service_evaluates_follow_the_pool_zone(wh: Warehouse) -> None:
    # 31 Oct 14:00 UTC (22:00 in Shanghai, October everywhere) and 31 Oct 17:00 UTC (1 Nov 01:00 in Shanghai)
    wh.ingest("a", {"gpu_minutes": gpu_minutes("h1", 1, range(-600, -590))})
    wh.ingest("b", {"gpu_minutes": gpu_minutes("h1", 1, range(-420, -410))})
    assert latest_month(wh) == OCTOBER
    assert latest_month(wh, SHANGHAI) == NOVEMBER
    assert latest_month(wh, SHANGHAI).tz == SHANGHAI
    clock = FakeClock(datetime(2026, 10, 31, 18, 0, tzinfo=UTC))  # 1 Nov 02:00 in Shanghai
    # The first local day of November: October is evaluated again for its late records.
    assert months_to_evaluate(wh, clock.now(), SHANGHAI) == [OCTOBER, NOVEMBER]
    assert months_to_evaluate(wh, clock.now()) == [OCTOBER]
    clock.advance(timedelta(days=1))
    assert months_to_evaluate(wh, clock.now(), SHANGHAI) == [NOVEMBER]


def test_the_default_review_is_due_at_local_midnight_of_the_first() -> None:
    schedule = MonthlyReview(SHANGHAI)
    clock = FakeClock(datetime(2026, 10, 31, 15, 59, tzinfo=UTC))  # 31 Oct 23:59 in Shanghai
    assert schedule.due(clock.now(), None) == Month(2026, 9)
    last = clock.now()
    assert schedule.due(clock.now(), last) is None
    clock.advance(timedelta(minutes=1))  # 1 Nov 00:00 in Shanghai, still 31 Oct in UTC
    assert schedule.due(clock.now(), last) == OCTOBER
    assert MonthlyReview().due(clock.now(), last) is None  # in UTC it is still October
    assert schedule.due(clock.now(), clock.now()) is None  # written once per month


def test_a_cron_firing_reviews_the_month_before_its_local_date() -> None:
    # 01:00 on the 1st in Shanghai is 17:00 on the last day of the month before in UTC.
    now = datetime(2026, 10, 31, 17, 30, tzinfo=UTC)
    assert due_runs("0 1 1 * *", SHANGHAI, None, now) == [OCTOBER]
    assert due_runs("0 1 1 * *", "UTC", None, now) == [Month(2026, 9)]


def test_the_review_schedule_runs_in_the_pools_zone_unless_told_otherwise() -> None:
    assert CronReviewSchedule.from_config(Config(timezone=SHANGHAI)).timezone == SHANGHAI
    own = Config(timezone=SHANGHAI, reports=ReportsConfig(timezone="Europe/Berlin"))
    assert CronReviewSchedule.from_config(own).timezone == "Europe/Berlin"
