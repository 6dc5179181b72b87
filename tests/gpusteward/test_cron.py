"""Cron expressions through cronsim: names, steps, day-field rules, time zones and DST."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from gpusteward import cron

NEW_YORK = "America/New_York"


def utc(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_weekday_and_month_names() -> None:
    fired = cron.firings("0 9 * * mon", "UTC", utc(2026, 11, 1), utc(2026, 12, 1))
    assert [f.day for f in fired] == [2, 9, 16, 23, 30]
    assert cron.firings("0 0 1 jan,jul *", "UTC", utc(2026, 1, 1), utc(2027, 1, 2)) == [
        utc(2026, 7, 1), utc(2027, 1, 1)]


def test_a_step_in_day_of_month_counts_as_a_star_so_both_day_fields_must_match() -> None:
    # "*/2" starts with "*": odd days AND Mondays (Debian cron), not odd days OR Mondays
    fired = cron.firings("0 9 */2 * mon", "UTC", utc(2026, 11, 1), utc(2026, 11, 30, 23))
    assert [f.day for f in fired] == [9, 23]
    # both restricted: either field matches
    fired = cron.firings("0 8 13 * fri", "UTC", utc(2026, 11, 1), utc(2026, 11, 15))
    assert [f.day for f in fired] == [6, 13]


def test_firings_in_a_zone_are_utc_instants() -> None:
    # 08:00 in Shanghai (UTC+8, no DST) is midnight UTC
    assert cron.firings("0 8 1 * *", "Asia/Shanghai", utc(2026, 11, 15), utc(2026, 12, 15)) == [utc(2026, 12, 1)]


def test_spring_forward_gap_runs_right_after_the_change() -> None:
    # 02:30 does not exist in New York on 8 March 2026: Debian's cron runs the job at 03:00 EDT
    fired = cron.firings("30 2 * * *", NEW_YORK, utc(2026, 3, 7), utc(2026, 3, 10))
    assert fired == [utc(2026, 3, 7, 7, 30), utc(2026, 3, 8, 7, 0), utc(2026, 3, 9, 6, 30)]


def test_autumn_repeated_hour_runs_once() -> None:
    # 01:30 happens twice in New York on 1 November 2026; the job runs at the first (EDT, 05:30 UTC)
    fired = cron.firings("30 1 * * *", NEW_YORK, utc(2026, 10, 31), utc(2026, 11, 3))
    assert fired == [utc(2026, 10, 31, 5, 30), utc(2026, 11, 1, 5, 30), utc(2026, 11, 2, 6, 30)]


def test_every_hour_keeps_real_hours_across_the_change() -> None:
    # "0 * * * *" is not a fixed time: it fires every real hour, 23 of them on the short day
    fired = cron.firings("0 * * * *", NEW_YORK, utc(2026, 3, 8, 5), utc(2026, 3, 9, 4))
    assert len(fired) == 23


def test_bad_expressions_say_what_is_wrong() -> None:
    assert cron.check("0 8 1 * *") is None
    for bad, words in (("0 8 1 *", "five fields"), ("60 8 1 * *", "minute"), ("0 8 0 * *", "day"),
                       ("x 8 1 * *", "minute"), ("0 0 31 2 *", "day")):
        problem = cron.check(bad)
        assert problem is not None
        assert words in problem.lower()
    with pytest.raises(ValueError, match="five fields"):
        cron.firings("0 8 1 *", "UTC", utc(2026, 1, 1), utc(2026, 2, 1))


def test_minute_matcher_uses_the_day_rules_of_the_schedule() -> None:
    minutes, hours, months, day_ok = cron.minute_matcher("*/30 9-17 L * *")
    assert sorted(minutes) == [0, 30]
    assert sorted(hours) == list(range(9, 18))
    assert months == frozenset(range(1, 13))
    assert day_ok(date(2026, 2, 28))
    assert not day_ok(date(2026, 2, 27))
