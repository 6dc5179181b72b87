"""The review states its month in the pool's time zone, with the UTC instants beside it."""

from __future__ import annotations

from datetime import datetime

from gpusteward.domain import Month
from reports.locale import Formatter


def test_a_shanghai_october_is_stated_in_local_time_and_utc() -> None:
    text = Formatter("en").period(Month(2026, 10, "Asia/Shanghai"))
    assert text.startswith(
        "Period 2026-10-01 00:00 to 2026-11-01 00:00 (UTC 2026-09-30 16:00 to 2026-10-31 16:00),"
        " in Asia/Shanghai, the pool's time zone"
    )
    zh = Formatter("zh").period(Month(2026, 10, "Asia/Shanghai"))
    assert "2026年10月01日 00:00" in zh
    assert "UTC 2026年09月30日 16:00" in zh
    assert "Asia/Shanghai" in zh


def test_a_utc_month_says_utc_once() -> None:
    text = Formatter("en").period(Month(2026, 10))
    assert text.startswith("Period 2026-10-01 00:00 to 2026-11-01 00:00, in UTC, the pool's time zone")


def test_moments_are_written_in_the_review_zone() -> None:
    fmt = Formatter("en", zone="America/New_York")
    assert fmt.moment(datetime(2027, 3, 14, 7, 30)) == "2027-03-14 03:30"  # EDT from 07:00 UTC
    assert fmt.moment(datetime(2027, 3, 14, 6, 30)) == "2027-03-14 01:30"  # EST before it
