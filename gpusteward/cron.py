"""Cron expressions, read and evaluated by cronsim (the library Healthchecks uses), not by our own parser.

Five fields: minute, hour, day of month, month, day of week, with `*`, lists, ranges, steps, month
and weekday names (`mon`, `jan`), `L` and `#` as Debian's cron reads them. As in Debian's cron,
when neither day field starts with `*` a day matches either field; `*/2` in day of month starts
with `*`, so both fields must match. In a zone with daylight saving time, Debian's cron rules hold
too: a job at a fixed time that falls in the spring-forward gap runs right after the change, and a
fixed time repeated in autumn runs once, at its first occurrence.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, date, datetime
from zoneinfo import ZoneInfo

from cronsim import CronSim, CronSimError

FIELDS = "minute hour day-of-month month day-of-week"


def _sim(expr: str, start: datetime, *, reverse: bool = False) -> CronSim:
    if len(expr.split()) != 5:
        raise ValueError(f"cron {expr!r}: expected five fields ({FIELDS})")
    try:
        return CronSim(expr, start, reverse=reverse)
    except CronSimError as exc:
        raise ValueError(f"cron {expr!r}: {exc}") from None


def check(expr: str) -> str | None:
    """What is wrong with `expr` (None: it is a valid five-field expression)."""
    try:
        _sim(expr, datetime(2000, 1, 1, tzinfo=UTC))
    except ValueError as exc:
        return str(exc)
    return None


def firings(expr: str, tz: str, after: datetime, until: datetime) -> list[datetime]:
    """The firing instants t (aware, UTC) with after < t <= until, oldest first; both bounds aware."""
    zone = ZoneInfo(tz)
    out: list[datetime] = []
    for moment in _sim(expr, after.astimezone(zone)):
        instant = moment.astimezone(UTC)
        if instant > until:
            break
        if instant > after:
            out.append(instant)
    return out


def minute_matcher(expr: str) -> tuple[frozenset[int], frozenset[int], frozenset[int], Callable[[date], bool]]:
    """The minutes, hours and months a local time must have, and the test its local date must pass.

    For masks over many timestamps at once (peak windows): the day test is cronsim's own, so day of
    month, day of week, `L` and `#` mean what they mean for the schedule.
    """
    sim = _sim(expr, datetime(2000, 1, 1))
    return frozenset(sim.minutes), frozenset(sim.hours), frozenset(sim.months), sim.match_day
