"""Daily series for the dashboards: idle GPU-hours per team, and preemptions per cluster, scenario and team.

- idle_daily: from the month's stored daily usage (sla/daily.py, whose days are the evaluation's,
  in the pool's zone): allocated, idle and idle-held GPU-hours per day, scenario and team. The idle
  minutes are the idle evaluator's own (runs of `idle.min_minutes` below `idle.util_below`), so a
  team's days add up to its idle_by_job figures. A month stored before the days carried idle
  minutes (migration 025) has null idle hours, never 0.
- preemptions_daily: the job records that ended in each local day, and how many ended PREEMPTED
  (what the ledger calls a preemption and the training preemption line counts), per cluster and the
  scenario and team of the record as the configured rules classify it. The records are grouped in
  DuckDB by the fields the rules match on, so only those groups are classified.
"""

from __future__ import annotations

import polars as pl

from gpusteward import tables
from gpusteward.attribution import classify_jobs
from gpusteward.config.schema import Config
from gpusteward.domain import Month
from warehouse.store import Warehouse

MINUTES_PER_HOUR = 60.0

IDLE_DAILY = tables.schema({
    "day": pl.Date,  # the evaluation's day, in `zone`
    "zone": pl.Utf8,
    "scenario": pl.Utf8,
    "team": pl.Utf8,
    "gpu_hours": pl.Float64,  # allocated GPU-hours held inside the day
    "idle_gpu_hours": pl.Float64,  # idle, memory released; null for months stored before migration 025
    "idle_held_gpu_hours": pl.Float64,  # idle while holding GPU memory; null likewise
})

PREEMPTIONS_DAILY = tables.schema({
    "day": pl.Date,  # the day in `zone` the records ended
    "zone": pl.Utf8,
    "cluster": pl.Utf8,
    "scenario": pl.Utf8,
    "team": pl.Utf8,
    "ended": pl.Int64,  # job records that ended that day
    "preempted": pl.Int64,  # ... of which ended PREEMPTED
})


def idle_daily(wh: Warehouse, month: Month) -> pl.DataFrame:
    """IDLE_DAILY of the evaluated `month` (empty when it was not evaluated)."""
    frame = wh.query(
        "SELECT day, ? AS zone, scenario, team, gpu_hours, idle_minutes / ? AS idle_gpu_hours,"
        " idle_held_minutes / ? AS idle_held_gpu_hours FROM daily_usage WHERE month = ? ORDER BY day, scenario, team",
        [month.tz, MINUTES_PER_HOUR, MINUTES_PER_HOUR, str(month)],
    )
    return tables.conform(frame, IDLE_DAILY) if frame.height else tables.empty(IDLE_DAILY)


def preemptions_daily(wh: Warehouse, month: Month, config: Config) -> pl.DataFrame:
    """PREEMPTIONS_DAILY for `month`: one row per local day, cluster, scenario and team with a record ending."""
    frame = wh.query(
        """
        SELECT CAST(timezone(?, timezone('UTC', end_time)) AS DATE) AS day, cluster, partition, qos, account,
               count(*) AS ended,
               count(*) FILTER (WHERE upper(split_part(state, ' ', 1)) = 'PREEMPTED') AS preempted
        FROM jobs WHERE end_time >= ? AND end_time < ?
        GROUP BY ALL
        """,
        [month.tz, month.start.replace(tzinfo=None), month.end.replace(tzinfo=None)],
    )
    if frame.height == 0:
        return tables.empty(PREEMPTIONS_DAILY)
    out = (
        classify_jobs(config, frame)
        .group_by("day", "cluster", "scenario", "team")
        .agg(pl.col("ended").sum(), pl.col("preempted").sum())
        .with_columns(pl.lit(month.tz).alias("zone"))
        .sort("day", "cluster", "scenario", "team")
    )
    return tables.conform(out, PREEMPTIONS_DAILY)
