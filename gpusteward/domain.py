"""The domain vocabulary shared by every floor: scenarios, months, job states."""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum


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
    """A calendar month in UTC, the unit of the review."""

    year: int
    month: int

    @classmethod
    def parse(cls, text: str) -> Month:
        m = _MONTH.match(text.strip())
        if not m or not 1 <= int(m.group(2)) <= 12:
            raise ValueError(f"expected a month as YYYY-MM, got {text!r}")
        return cls(int(m.group(1)), int(m.group(2)))

    @classmethod
    def of(cls, moment: datetime) -> Month:
        return cls(moment.year, moment.month)

    @property
    def start(self) -> datetime:
        return datetime(self.year, self.month, 1, tzinfo=UTC)

    @property
    def end(self) -> datetime:
        """The first instant of the next month (exclusive end)."""
        return self.next().start

    def next(self) -> Month:
        return Month(self.year + 1, 1) if self.month == 12 else Month(self.year, self.month + 1)

    def previous(self) -> Month:
        return Month(self.year - 1, 12) if self.month == 1 else Month(self.year, self.month - 1)

    @property
    def minutes(self) -> int:
        return int((self.end - self.start).total_seconds() // 60)

    def __str__(self) -> str:
        return f"{self.year:04d}-{self.month:02d}"
