"""Is a running job idle right now, and since when? From the same minute states the month's idle detection uses.

The states are sla.idle_states' (utilisation below `idle.util_below` in a run of at least
`idle.min_minutes`; a missing minute breaks a run). Judged at the last whole minute before `now`:
- a job whose GPUs have no row with a utilisation in that minute is `no_data`: a silent exporter
  or a host in an outage is unknown, never idle;
- a job with fewer GPUs reporting than it holds is `partial_data` (the silent ones could be busy);
- a job with any busy GPU in that minute is `busy`;
- otherwise it is idle since the latest start among its GPUs' current idle runs: the job is idle
  only from the minute all of them were. A run that began before the minutes read is clipped at
  their start (`idle_since_clipped`), so idle-since never precedes a minute that was seen.
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from gpusteward.config.schema import IdleConfig
from gpusteward.tables import GPU_MINUTES, TS, conform, schema
from sla.common import MINUTE
from sla.idle_states import BUSY, idle_runs_of, minute_states

JOB_IDLENESS = schema({
    "cluster": pl.Utf8, "job_id": pl.Utf8, "gpus_seen": pl.Int64, "busy_gpus": pl.Int64, "idle_since": TS,
    "util_source": pl.Utf8,
})


def last_minute(now: datetime) -> datetime:
    """The start of the last whole minute before `now`."""
    return now.replace(second=0, microsecond=0) - MINUTE


def job_idleness(gpu_minutes: pl.DataFrame, now: datetime, idle: IdleConfig) -> pl.DataFrame:
    """JOB_IDLENESS of every job with a GPU reporting in the last whole minute before `now`."""
    last = last_minute(now)
    minutes = conform(gpu_minutes, GPU_MINUTES).filter(pl.col("ts") <= last)
    states = minute_states(minutes, idle)
    at_last = states.filter(pl.col("ts") == last)
    if at_last.is_empty():
        return pl.DataFrame(schema=JOB_IDLENESS)
    runs = idle_runs_of(states).filter(pl.col("start") + pl.duration(minutes=pl.col("minutes")) == last + MINUTE)
    gpus = at_last.join(runs.select("cluster", "host", "gpu", "job_id", "start"),
                        on=["cluster", "host", "gpu", "job_id"], how="left")
    out = gpus.group_by("cluster", "job_id").agg(
        pl.struct("host", "gpu").n_unique().cast(pl.Int64).alias("gpus_seen"),
        (pl.col("state") == BUSY).sum().cast(pl.Int64).alias("busy_gpus"),
        pl.col("start").max().alias("idle_since"),
        pl.when(pl.col("util_source").n_unique() > 1).then(pl.lit("mixed"))
        .otherwise(pl.col("util_source").first()).alias("util_source"),
    )
    return conform(out, JOB_IDLENESS)
