"""One month's evaluated outputs, as stored by the warehouse and read by reports and dashboards."""

from __future__ import annotations

from dataclasses import dataclass

import polars as pl

from gpusteward.domain import Month


@dataclass(frozen=True)
class MonthOutputs:
    """Frames follow the schemas of sla/results.py.

    results: SLA_RESULTS; idle: IDLE_BY_JOB; episodes: BREACH_EPISODES; usage: USAGE;
    completeness: COMPLETENESS; plan_items: QUOTA_PLAN_ITEMS of the month's latest plan (may be empty).
    """

    month: Month
    results: pl.DataFrame
    idle: pl.DataFrame
    episodes: pl.DataFrame
    usage: pl.DataFrame
    completeness: pl.DataFrame
    plan_items: pl.DataFrame
