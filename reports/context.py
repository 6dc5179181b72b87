"""What every section builder reads: the month's frames checked against their schemas, names, notes."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from gpusteward.config.protection import configured_lines
from gpusteward.config.schema import Config
from gpusteward.domain import UNATTRIBUTED
from gpusteward.indicators import INDICATORS, Direction, Unit
from reports.evidence import Notes, cluster_coverage
from reports.model import Bound, Message, Quantity, QuantityKind, Term, Text
from sla.followup import AppliedChange
from sla.outputs import MonthOutputs
from sla.results import (
    ACCOUNT_ROLLUP,
    ARRAYS,
    BREACH_EPISODES,
    COMPLETENESS,
    DAILY_USAGE,
    FAILURES,
    IDLE_BY_JOB,
    PLAN_PROTECTED,
    PLAN_REPLAY,
    QUOTA_PLAN_ITEMS,
    SHOWBACK,
    SLA_RESULTS,
    USAGE,
)

FRAMES: dict[str, tuple[str, pl.Schema]] = {
    "results": ("sla_results", SLA_RESULTS),
    "idle": ("idle_by_job", IDLE_BY_JOB),
    "episodes": ("breach_episodes", BREACH_EPISODES),
    "usage": ("usage", USAGE),
    "completeness": ("completeness", COMPLETENESS),
    "plan_items": ("quota_plan_items", QUOTA_PLAN_ITEMS),
    "plan_replay": ("quota_plan_replay", PLAN_REPLAY),
    "plan_protected": ("quota_plan_replay", PLAN_PROTECTED),
    "daily_usage": ("daily_usage", DAILY_USAGE),
    "failures": ("failures", FAILURES),
    "arrays": ("month_arrays", ARRAYS),
    "accounts": ("month_accounts", ACCOUNT_ROLLUP),
    "showback": ("showback", SHOWBACK),
}
"""MonthOutputs attribute -> (source name in the catalogue, schema)."""

_KIND_OF_UNIT: dict[Unit, QuantityKind] = {
    Unit.DURATION: "duration",
    Unit.RATIO: "percent",
    Unit.GPU_HOURS: "gpu_hours",
    Unit.COUNT: "count",
}
_MULTIPLES = frozenset({"share_over_entitlement"})


def indicator_kind(indicator: str) -> QuantityKind:
    """How values of an indicator are written; unknown indicators are plain numbers."""
    if indicator in _MULTIPLES:
        return "multiple"
    found = INDICATORS.get(indicator)
    return _KIND_OF_UNIT[found.unit] if found else "number"


def indicator_bound(indicator: str) -> Bound | None:
    found = INDICATORS.get(indicator)
    if found is None:
        return None
    return "at_most" if found.direction is Direction.AT_MOST else "at_least"


class Context:
    """The month's outputs, each frame conformed to its schema or marked unusable."""

    def __init__(
        self,
        outputs: MonthOutputs,
        config: Config,
        history: Sequence[MonthOutputs] = (),
        applied: Sequence[AppliedChange] = (),
        reclaimed: pl.DataFrame | None = None,
    ) -> None:
        self.month = outputs.month.in_zone(config.timezone)  # stored months carry no zone; the config says
        self.config = config
        self.history = tuple(history)  # earlier months, read by the trend and follow-up sections
        self.applied = tuple(applied)  # quota changes applied so far, read by the follow-up section
        self.reclaimed = reclaimed  # the month's reclaim ledger lines (RECLAIM_DECISIONS); None: not read
        self.notes = Notes()
        self._frames: dict[str, pl.DataFrame] = {}
        self._missing: dict[str, tuple[str, ...]] = {}
        for attr, (_, schema) in FRAMES.items():
            frame = getattr(outputs, attr, None)
            if not isinstance(frame, pl.DataFrame):
                self._missing[attr] = tuple(schema.names())
                self._frames[attr] = pl.DataFrame(schema=schema)
                continue
            missing = tuple(name for name in schema.names() if name not in frame.columns)
            if missing:
                self._missing[attr] = missing
                self._frames[attr] = pl.DataFrame(schema=schema)
            else:
                self._frames[attr] = frame.select(
                    pl.col(name).cast(dtype, strict=False) for name, dtype in schema.items()
                )
        self.gpu_coverage = cluster_coverage(self._frames["completeness"], "gpu_minutes")

    def frame(self, attr: str) -> pl.DataFrame:
        """The conformed frame; empty (with its schema) when it was unusable."""
        return self._frames[attr]

    def source(self, attr: str) -> str:
        return FRAMES[attr][0]

    def unavailable(self, attr: str) -> Message | None:
        """Why a frame cannot back a section, or None when it can."""
        source = Term("source", self.source(attr))
        if attr in self._missing:
            columns = Text(", ".join(self._missing[attr]))
            return Message("reason.missing_columns", (("source", source), ("columns", columns)))
        if self._frames[attr].is_empty():
            return Message("reason.empty", (("source", source),))
        return None

    def team(self, key: str | None) -> Text | Term:
        """A team's display name from the config, else its key; work no rule attributed is a term."""
        if key is None:
            return Term("common", "none")
        if key == UNATTRIBUTED and key not in self.config.teams:
            return Term("team", UNATTRIBUTED)
        team = self.config.teams.get(key)
        return Text(team.display_name if team and team.display_name else key)

    def fallback(self, line: str, subject: str, stored: str | None) -> Text:
        """A breach's recommended action: the stored text, in every language the configured line gives it."""
        configured = configured_lines(self.config.protection, line, subject)
        texts = next((c.fallback for c in configured if str(c.fallback) == stored), None)
        if texts is None:
            return Text(stored or "")
        return Text(stored or texts.default, translations=texts.translations)

    def subject(self, kind: str | None, subject: str | None) -> Text | Term:
        if kind == "team":
            return self.team(subject)
        return Text(subject) if subject is not None else Term("common", "none")

    @staticmethod
    def value(indicator: str, value: float | None) -> Quantity:
        return Quantity(value, indicator_kind(indicator))

    @staticmethod
    def objective(indicator: str, value: float | None) -> Quantity | Term:
        """The objective with its direction ("≤ 1h"); "—" when none is configured."""
        if value is None:
            return Term("common", "none")
        return Quantity(value, indicator_kind(indicator), indicator_bound(indicator))
