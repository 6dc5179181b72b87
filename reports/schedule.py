"""When the monthly review is due: five-field cron expressions in a time zone, and catch-up.

The cron expressions are read and evaluated by `gpusteward.cron` (cronsim, Debian cron's rules):
weekday and month names, steps such as `*/2` in day of month, and in a zone with daylight saving
time a firing in the spring-forward gap runs right after the change, one in the repeated autumn
hour runs once.

Each firing reviews the month before the firing's local date. `due_runs` lists the months whose
firing fell after the last run and at or before now, so a service that was down catches up.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

from gpusteward import cron
from gpusteward.domain import Month

DEFAULT_SCHEDULE = "0 8 1 * *"
MAX_CATCH_UP = 12
"""At most this many missed months are reviewed in one catch-up (the newest ones)."""
FIRST_RUN_LOOKBACK = timedelta(days=62)
"""With no record of an earlier run, only a firing this recent is caught up (the latest one)."""


def reviewed_month(firing: datetime, tz: ZoneInfo) -> Month:
    """The month a firing reviews: the one before the firing's local date."""
    return Month.of(firing, tz.key).previous()


def due_runs(schedule: str, tz: str, last_run: datetime | None, now: datetime) -> list[Month]:
    """The months to review now, oldest first: one per firing after `last_run` and at or before `now`.

    `last_run` is when the schedule last fired successfully (None: never); both instants are
    timezone-aware. A first start catches up only the latest firing of the last FIRST_RUN_LOOKBACK;
    a long outage at most MAX_CATCH_UP months.
    """
    if now.tzinfo is None or (last_run is not None and last_run.tzinfo is None):
        raise ValueError("due_runs needs timezone-aware instants")
    zone = ZoneInfo(tz)
    if last_run is None:
        firings = cron.firings(schedule, tz, now - FIRST_RUN_LOOKBACK, now)[-1:]
    else:
        firings = cron.firings(schedule, tz, last_run, now)
    months = sorted({reviewed_month(f, zone) for f in firings})
    return months[-MAX_CATCH_UP:]


def last_firing(schedule: str, tz: str, now: datetime, *, lookback: timedelta = FIRST_RUN_LOOKBACK) -> datetime | None:
    """The latest firing at or before `now` within `lookback`, or None."""
    found = cron.firings(schedule, tz, now - lookback, now)
    return found[-1] if found else None


def next_firing(schedule: str, tz: str, now: datetime, *, horizon: timedelta = timedelta(days=400)) -> datetime | None:
    """The first firing after `now` within `horizon`, or None. An expression that can never fire
    ("0 0 31 2 *") is refused by the cron library with a ValueError, as the config check refuses it."""
    found = cron.firings(schedule, tz, now, now + horizon)
    return found[0] if found else None
