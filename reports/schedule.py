"""When the monthly review is due: five-field cron expressions in a time zone, and catch-up.

`Cron.parse("0 8 1 * *")` reads minute, hour, day of month, month and day of week (0 or 7 is
Sunday) with `*`, lists, ranges and steps. As in cron, when both day fields are restricted a day
matches either. Times that do not exist in the zone (a spring-forward gap) are skipped; an
ambiguous time (autumn) fires once, at its first occurrence.

Each firing reviews the month before the firing's local date. `due_runs` lists the months whose
firing fell after the last run and at or before now, so a service that was down catches up.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from gpusteward.domain import Month

DEFAULT_SCHEDULE = "0 8 1 * *"
MAX_CATCH_UP = 12
"""At most this many missed months are reviewed in one catch-up (the newest ones)."""
FIRST_RUN_LOOKBACK = timedelta(days=62)
"""With no record of an earlier run, only a firing this recent is caught up (the latest one)."""

_FIELDS = (("minute", 0, 59), ("hour", 0, 23), ("day of month", 1, 31), ("month", 1, 12), ("day of week", 0, 7))


def _field(text: str, name: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for part in text.split(","):
        body, _, step_text = part.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if body == "*":
                start, stop = low, high
            elif "-" in body:
                a, b = body.split("-", 1)
                start, stop = int(a), int(b)
            else:
                start = int(body)
                stop = high if step_text else start
        except ValueError:
            raise ValueError(f"cron {name}: cannot read {part!r}") from None
        if step < 1 or not low <= start <= stop <= high:
            raise ValueError(f"cron {name}: {part!r} is outside {low}-{high}")
        values.update(range(start, stop + 1, step))
    return frozenset(values)


@dataclass(frozen=True)
class Cron:
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    any_day: bool
    any_weekday: bool

    @classmethod
    def parse(cls, text: str) -> Cron:
        parts = text.split()
        if len(parts) != len(_FIELDS):
            raise ValueError(f"cron expression {text!r}: expected 5 fields (minute hour day month weekday)")
        sets = [_field(p, name, low, high) for p, (name, low, high) in zip(parts, _FIELDS, strict=True)]
        weekdays = frozenset(d % 7 for d in sets[4])
        return cls(sets[0], sets[1], sets[2], sets[3], weekdays, parts[2] == "*", parts[4] == "*")

    def matches_day(self, day: date) -> bool:
        if day.month not in self.months:
            return False
        in_month, in_week = day.day in self.days, day.isoweekday() % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return in_month and in_week
        return in_month or in_week

    def firings(self, tz: ZoneInfo, after: datetime, until: datetime) -> list[datetime]:
        """Firing instants t (aware, UTC) with after < t <= until, oldest first."""
        out: list[datetime] = []
        day = after.astimezone(tz).date()
        last = until.astimezone(tz).date()
        while day <= last:
            if self.matches_day(day):
                for hour in sorted(self.hours):
                    for minute in sorted(self.minutes):
                        local = datetime.combine(day, time(hour, minute), tzinfo=tz)
                        moment = local.astimezone(UTC)
                        if moment.astimezone(tz).replace(tzinfo=None) != local.replace(tzinfo=None):
                            continue  # does not exist in this zone (spring forward)
                        if after < moment <= until:
                            out.append(moment)
            day += timedelta(days=1)
        return out


def reviewed_month(firing: datetime, tz: ZoneInfo) -> Month:
    """The month a firing reviews: the one before the firing's local date."""
    return Month.of(firing.astimezone(tz)).previous()


def due_runs(schedule: str, tz: str, last_run: datetime | None, now: datetime) -> list[Month]:
    """The months to review now, oldest first: one per firing after `last_run` and at or before `now`.

    `last_run` is when the schedule last fired successfully (None: never); both instants are
    timezone-aware. A first start catches up only the latest firing of the last FIRST_RUN_LOOKBACK;
    a long outage at most MAX_CATCH_UP months.
    """
    if now.tzinfo is None or (last_run is not None and last_run.tzinfo is None):
        raise ValueError("due_runs needs timezone-aware instants")
    zone = ZoneInfo(tz)
    cron = Cron.parse(schedule)
    if last_run is None:
        firings = cron.firings(zone, now - FIRST_RUN_LOOKBACK, now)[-1:]
    else:
        firings = cron.firings(zone, last_run, now)
    months = sorted({reviewed_month(f, zone) for f in firings})
    return months[-MAX_CATCH_UP:]


def last_firing(schedule: str, tz: str, now: datetime, *, lookback: timedelta = FIRST_RUN_LOOKBACK) -> datetime | None:
    """The latest firing at or before `now` within `lookback`, or None."""
    found = Cron.parse(schedule).firings(ZoneInfo(tz), now - lookback, now)
    return found[-1] if found else None


def next_firing(schedule: str, tz: str, now: datetime, *, horizon: timedelta = timedelta(days=400)) -> datetime | None:
    """The first firing after `now` within `horizon`, or None (e.g. "0 0 31 2 *" never fires)."""
    found = Cron.parse(schedule).firings(ZoneInfo(tz), now, now + horizon)
    return found[0] if found else None
