"""The domain vocabulary shared by every floor: scenarios, months, job states."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from zoneinfo import ZoneInfo


class Scenario(StrEnum):
    TRAINING = "training"
    FINE_TUNING = "fine_tuning"
    EVALUATION = "evaluation"
    ONLINE_INFERENCE = "online_inference"
    BATCH_INFERENCE = "batch_inference"
    INTERACTIVE = "interactive"
    GENERAL_COMPUTE = "general_compute"


UNATTRIBUTED = "unattributed"
"""Team or scenario of a GPU-minute or job that no rule or label could attribute."""

# sacct state strings (Slurm job_state_string); flag states such as REQUEUED take precedence.
SUCCESS_STATES = frozenset({"COMPLETED"})
FAILURE_STATES = frozenset({"FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"})
INTERRUPTED_STATES = frozenset({"PREEMPTED", "REQUEUED"})
CANCELLED_STATES = frozenset({"CANCELLED"})
TERMINAL_STATES = SUCCESS_STATES | FAILURE_STATES | INTERRUPTED_STATES | CANCELLED_STATES

_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


@dataclass(frozen=True, order=True)
class Month:
    """A calendar month in the pool's time zone (`tz`, UTC by default), the unit of the review.

    The month is named by year and month alone: `tz` says where its days begin and end, not which
    month it is, so it takes no part in equality, order or hashing. `start` and `end` are instants in
    UTC: October in Asia/Shanghai runs from 30 September 16:00 to 31 October 16:00 UTC, and a month
    in America/New_York holding a DST change has 743 or 745 hours.
    """

    year: int
    month: int
    tz: str = field(default="UTC", compare=False)

    @classmethod
    def parse(cls, text: str, tz: str = "UTC") -> Month:
        m = _MONTH.match(text.strip())
        if not m or not 1 <= int(m.group(2)) <= 12:
            raise ValueError(f"expected a month as YYYY-MM, got {text!r}")
        return cls(int(m.group(1)), int(m.group(2)), tz)

    @classmethod
    def of(cls, moment: datetime, tz: str = "UTC") -> Month:
        """The month `moment` falls in, in `tz` (a naive moment is UTC)."""
        aware = moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
        local = aware.astimezone(ZoneInfo(tz))
        return cls(local.year, local.month, tz)

    def in_zone(self, tz: str) -> Month:
        return replace(self, tz=tz)

    @property
    def zone(self) -> ZoneInfo:
        return ZoneInfo(self.tz)

    @property
    def start(self) -> datetime:
        """The first instant of the month, local midnight on the 1st, as a UTC datetime."""
        return datetime(self.year, self.month, 1, tzinfo=self.zone).astimezone(UTC)

    @property
    def end(self) -> datetime:
        """The first instant of the next month (exclusive end), as a UTC datetime."""
        return self.next().start

    def next(self) -> Month:
        return Month(self.year + 1, 1, self.tz) if self.month == 12 else Month(self.year, self.month + 1, self.tz)

    def previous(self) -> Month:
        return Month(self.year - 1, 12, self.tz) if self.month == 1 else Month(self.year, self.month - 1, self.tz)

    @property
    def minutes(self) -> int:
        # Both ends are UTC instants, so a DST change inside the month counts (743 or 745 hours).
        return int((self.end - self.start).total_seconds() // 60)

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"
