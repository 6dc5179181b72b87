"""One month's evaluated outputs, as stored by the warehouse and read by reports and dashboards."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from gpusteward.domain import Month
from sla.results import (
    ACCOUNT_ROLLUP,
    ARRAYS,
    DAILY_USAGE,
    FAILURES,
    IDLE_BY_GPU,
    LEDGER,
    PLAN_PROTECTED,
    PLAN_REPLAY,
    SHOWBACK,
)


def _empty_ledger() -> pl.DataFrame:
    return pl.DataFrame(schema=LEDGER)


def _empty_gpu_states() -> pl.DataFrame:
    return pl.DataFrame(schema=IDLE_BY_GPU)


def _empty_daily_usage() -> pl.DataFrame:
    return pl.DataFrame(schema=DAILY_USAGE)


def _empty_failures() -> pl.DataFrame:
    return pl.DataFrame(schema=FAILURES)


def _empty_arrays() -> pl.DataFrame:
    return pl.DataFrame(schema=ARRAYS)


def _empty_accounts() -> pl.DataFrame:
    return pl.DataFrame(schema=ACCOUNT_ROLLUP)


def _empty_showback() -> pl.DataFrame:
    return pl.DataFrame(schema=SHOWBACK)


def _rows(rows: Sequence[Mapping[str, Any]], target: pl.Schema) -> pl.DataFrame:
    if not rows:
        return pl.DataFrame(schema=target)
    return pl.DataFrame([{n: r.get(n) for n in target} for r in rows], schema=target, orient="row")


def plan_replay_frame(rows: Sequence[Mapping[str, Any]] = ()) -> pl.DataFrame:
    """PLAN_REPLAY from a stored plan's `replay` rows (a plan stored before it had one: empty)."""
    return _rows(rows, PLAN_REPLAY)


def plan_protected_frame(rows: Sequence[Mapping[str, Any]] = ()) -> pl.DataFrame:
    """PLAN_PROTECTED from a stored plan's `protected` list (none: empty)."""
    return _rows(rows, PLAN_PROTECTED)


@dataclass(frozen=True)
class MonthOutputs:
    """Frames follow the schemas of sla/results.py.

    results: SLA_RESULTS; idle: IDLE_BY_JOB; episodes: BREACH_EPISODES; usage: USAGE;
    completeness: COMPLETENESS; plan_items: QUOTA_PLAN_ITEMS of the month's latest plan (may be empty);
    ledger: LEDGER; gpu_states: IDLE_BY_GPU; daily_usage: DAILY_USAGE; failures: FAILURES; arrays:
    ARRAYS; accounts: ACCOUNT_ROLLUP (filled in by the caller that reads the Slurm queue snapshots,
    like plan_items); plan_replay: PLAN_REPLAY of the month's latest plan (observed, replayed under the
    current limits and under the plan, per cluster, team and queue); plan_protected: PLAN_PROTECTED, the
    protected objectives that plan's replay makes worse; showback: SHOWBACK, computed from the warehouse
    with today's prices when a review or a read model is made (never stored: a price change applies to
    every month read after it). The last nine default to empty frames, so that readers of stored months
    written before they existed still build a MonthOutputs.
    """

    month: Month
    results: pl.DataFrame
    idle: pl.DataFrame
    episodes: pl.DataFrame
    usage: pl.DataFrame
    completeness: pl.DataFrame
    plan_items: pl.DataFrame
    ledger: pl.DataFrame = field(default_factory=_empty_ledger)
    gpu_states: pl.DataFrame = field(default_factory=_empty_gpu_states)
    daily_usage: pl.DataFrame = field(default_factory=_empty_daily_usage)
    failures: pl.DataFrame = field(default_factory=_empty_failures)
    arrays: pl.DataFrame = field(default_factory=_empty_arrays)
    accounts: pl.DataFrame = field(default_factory=_empty_accounts)
    plan_replay: pl.DataFrame = field(default_factory=plan_replay_frame)
    plan_protected: pl.DataFrame = field(default_factory=plan_protected_frame)
    showback: pl.DataFrame = field(default_factory=_empty_showback)
