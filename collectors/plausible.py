"""What a sample may plausibly say: its time near now, its value within the field's physical range.

Readers call these on their sample arrays before rolling them up; whatever fails is refused (left
out) and counted in one `Problem` per rule, never stored silently and never clamped. The time
window is `LimitsConfig.max_sample_age` before and `max_sample_ahead` after `now`; a time outside
it that would fit once multiplied or divided by 1,000 is named as a unit error (OpenMetrics writes
seconds, the text format 0.0.4 milliseconds).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime

import numpy as np
import numpy.typing as npt

from collectors.numbers import NO_TIMESTAMP
from gpusteward.config.limits import LimitsConfig

Mask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class Range:
    """A field's physical range, both ends included; why it is so, for the docs and messages."""

    low: float
    high: float
    unit: str
    why: str

    def describe(self) -> str:
        high = "" if math.isinf(self.high) else f"{self.high:g}"
        return f"{self.low:g}..{high} {self.unit}".rstrip()


@dataclass(frozen=True)
class TimeWindow:
    """Sample times (int ms since the epoch) accepted by a reader."""

    low_ms: int
    high_ms: int
    openmetrics: bool = False

    @classmethod
    def around(cls, now: datetime, limits: LimitsConfig, *, openmetrics: bool = False) -> TimeWindow:
        now = now if now.tzinfo else now.replace(tzinfo=UTC)
        low = now - limits.max_sample_age
        high = now + limits.max_sample_ahead
        return cls(int(low.timestamp() * 1000), int(high.timestamp() * 1000), openmetrics)

    def outside(self, ts: npt.NDArray[np.int64]) -> Mask:
        """Timed samples outside the window (samples without a timestamp are not judged)."""
        result: Mask = (ts != NO_TIMESTAMP) & ((ts < self.low_ms) | (ts > self.high_ms))
        return result

    def explain(self, ts: npt.NDArray[np.int64]) -> str:
        """Why the times `ts` (all outside) are refused, naming a likely unit error."""
        first = int(ts[0])
        when = _iso(first)
        span = f"between {_iso(self.low_ms)} and {_iso(self.high_ms)} (limits.max_sample_age, max_sample_ahead)"
        scaled_down = ts // 1000
        scaled_up = ts.astype(np.float64) * 1000
        if self.openmetrics and bool(((scaled_down >= self.low_ms) & (scaled_down <= self.high_ms)).all()):
            hint = "; the times look written in milliseconds, and OpenMetrics timestamps are seconds"
        elif not self.openmetrics and bool(((scaled_up >= self.low_ms) & (scaled_up <= self.high_ms)).all()):
            hint = (
                "; the times look written in seconds (they fall in 1970), and the text format 0.0.4 writes milliseconds"
            )
        else:
            hint = ""
        return f"outside the accepted time window: the first is {when}, samples must be {span}{hint}"


def _iso(ms: int) -> str:
    try:
        return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    except (OverflowError, OSError, ValueError):
        return f"{ms} ms after 1970 (beyond any date)"


def out_of_range(values: npt.NDArray[np.float64], rng: Range) -> Mask:
    """Finite values outside `rng` (non-finite values are judged separately)."""
    result: Mask = np.isfinite(values) & ((values < rng.low) | (values > rng.high))
    return result


def first_text(values: npt.NDArray[np.float64]) -> str:
    return f"{float(values[0]):g}" if len(values) else ""
