"""Prices of showback (docs/showback.md): a GPU's price per whole-GPU-equivalent hour, time-of-day
factors integrated exactly over any stretch of time, and cents apportioned so that parts add up.

Everything here is Decimal: a month of a pool is a sum of thousands of products, and finance checks
that the parts add up to the total to the cent.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import ROUND_FLOOR, ROUND_HALF_EVEN, Decimal, localcontext
from fnmatch import fnmatchcase
from zoneinfo import ZoneInfo

from gpusteward.config.showback import WEEKDAYS, PriceWindow, ShowbackConfig
from gpusteward.config.showback_checks import window_minutes

SLOT = timedelta(minutes=15)
"""Windows start and end on the quarter hour, and every time zone's offset is a multiple of 15 minutes,
so a price is constant over each UTC quarter hour."""
CENT = Decimal("0.01")
_US_PER_HOUR = Decimal(3_600_000_000)
PRECISION = 50


def exact(value: float | int | Decimal | None) -> Decimal:
    """A number as Decimal, from its shortest repr (a share 1/7 stored as DOUBLE is 0.14285714285714285)."""
    if value is None:
        return Decimal(0)
    return value if isinstance(value, Decimal) else Decimal(repr(float(value)))


@dataclass(frozen=True)
class PriceBook:
    """`showback.prices`: the first matching rule, else `showback.gpu_hour`."""

    config: ShowbackConfig

    def per_equivalent_hour(self, cluster: str, model: str | None, profile: str | None, share: Decimal) -> Decimal:
        """Price of one whole-GPU-equivalent hour on a GPU (a slice-hour's price over its share)."""
        for rule in self.config.prices:
            if not fnmatchcase(cluster, rule.cluster) or not fnmatchcase(model or "", rule.model):
                continue
            if not rule.mig_profile:
                return rule.gpu_hour  # a card's price; a slice pays it times its share
            if profile and fnmatchcase(profile, rule.mig_profile) and share > 0:
                with localcontext() as ctx:
                    ctx.prec = PRECISION
                    return rule.gpu_hour / share
        return self.config.gpu_hour


def _in_window(window: PriceWindow, span: tuple[int, int], weekday: int, minute: int) -> bool:
    start, end = span
    if start < end:
        return start <= minute < end and WEEKDAYS[weekday] in window.days
    # past midnight: the evening belongs to its own day, the morning to the day before
    return (minute >= start and WEEKDAYS[weekday] in window.days) or (
        minute < end and WEEKDAYS[(weekday - 1) % 7] in window.days
    )


class TimeFactors:
    """The price factor of every quarter hour of [start, end) (naive UTC) in the pool's zone, and its
    exact integral: `hours(a, b)` is the factor-weighted hours of [a, b)."""

    def __init__(self, windows: Sequence[PriceWindow], start: datetime, end: datetime, zone: str, *, energy: bool):
        self.start = start
        self.end = max(start, end)
        spans = [(w, window_minutes(w.hours)) for w in windows]
        tz = ZoneInfo(zone)
        self.edges: list[int] = []  # microseconds from start
        self.cumulative: list[Decimal] = [Decimal(0)]  # factor x microseconds up to each edge
        self.factors: list[Decimal] = []
        at = start - timedelta(minutes=start.minute % 15, seconds=start.second, microseconds=start.microsecond)
        while at < self.end:
            local = at.replace(tzinfo=ZoneInfo("UTC")).astimezone(tz)
            minute = local.hour * 60 + local.minute
            factor = Decimal(1)
            for window, span in spans:
                if span is not None and _in_window(window, span, local.weekday(), minute):
                    factor = window.energy_factor if energy else window.gpu_factor
                    break
            lo, hi = max(at, start), min(at + SLOT, self.end)
            self.edges.append(self._us(lo))
            self.factors.append(factor)
            self.cumulative.append(self.cumulative[-1] + factor * (self._us(hi) - self._us(lo)))
            at += SLOT
        self.edges.append(self._us(self.end))

    def _us(self, moment: datetime) -> int:
        return (moment - self.start) // timedelta(microseconds=1)

    def _integral(self, moment: datetime) -> Decimal:
        us = min(max(self._us(moment), 0), self.edges[-1])
        k = max(0, bisect.bisect_right(self.edges, us) - 1)
        if k >= len(self.factors):
            return self.cumulative[-1]
        return self.cumulative[k] + self.factors[k] * (us - self.edges[k])

    def hours(self, a: datetime, b: datetime) -> Decimal:
        """Factor-weighted hours of [a, b) clipped to the window (0 when empty)."""
        if b <= a:
            return Decimal(0)
        with localcontext() as ctx:
            ctx.prec = PRECISION
            return max(Decimal(0), (self._integral(b) - self._integral(a)) / _US_PER_HOUR)

    def factor_at(self, moment: datetime) -> Decimal:
        """The factor of the quarter hour holding `moment` (1 outside the window)."""
        us = self._us(moment)
        if us < 0 or us >= self.edges[-1]:
            return Decimal(1)
        return self.factors[max(0, bisect.bisect_right(self.edges, us) - 1)]


def to_cents(value: Decimal) -> Decimal:
    return value.quantize(CENT, rounding=ROUND_HALF_EVEN)


def apportion(parts: Sequence[Decimal]) -> list[Decimal]:
    """`parts` in cents that add up to their exact sum rounded to the cent (largest remainder: each part
    is rounded down, and the cents left go to the largest remainders, the earlier part on a tie)."""
    if not parts:
        return []
    with localcontext() as ctx:
        ctx.prec = PRECISION
        total = to_cents(sum(parts, Decimal(0)))
        floors = [p.quantize(CENT, rounding=ROUND_FLOOR) for p in parts]
        left = int((total - sum(floors, Decimal(0))) / CENT)
        order = sorted(range(len(parts)), key=lambda i: (-(parts[i] - floors[i]), i))
        for i in order[: max(0, left)]:
            floors[i] += CENT
    return floors
