"""GPU-hours allocated per day, scenario and team, with the mean utilisation while allocated.

Days begin at midnight in the pool's time zone (`timezone`, UTC by default): a DST day has 23 or
25 hours.

GPU-hours are gpus_allocated x the part of the record's [start, end) inside each day and the
evaluation window (a running job holds its GPUs up to the end of the data), so a day's rows sum to
what sla.usage counts for the month. The utilisation is that of the allocated GPU-minutes with
data (GR_ENGINE_ACTIVE when present, else GPU_UTIL / 100), attributed through the job id to the
team and scenario of the job's latest record; minutes without telemetry are left out, never 0.
The day's idle and idle-held GPU-minutes (sla.idle_states, counted in the same digest, in whole-GPU
equivalents) are attributed the same way, so a team's days sum to its idle_by_job minutes (exactly
for whole GPUs; MIG minutes are rounded per day here and per job there).
"""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from gpusteward.capacity import held_gpus
from gpusteward.config.schema import Config, IdleConfig
from gpusteward.domain import UNATTRIBUTED
from sla.common import Window, classified_jobs, local_date, local_midnight, window_of, with_overlap
from sla.inputs import EvaluationInputs
from sla.minute_digest import minute_digest, whole_minutes
from sla.results import DAILY_USAGE

_KEY = ("day", "scenario", "team")
_IDLE = ("idle_minutes", "idle_held_minutes")
_DAY = timedelta(days=1)


def _daily_hours(jobs: pl.DataFrame, window: Window) -> pl.DataFrame:
    """(day, scenario, team, gpu_hours) from the records' held intervals, split at local midnight."""
    held = jobs.filter((pl.col("held_s") > 0) & (pl.col("gpus_allocated").fill_null(0) > 0)).select(
        "scenario",
        "team",
        held_gpus().alias("_gpus"),
        pl.max_horizontal(pl.col("start_time"), pl.lit(window.start)).alias("_s"),
        pl.min_horizontal(pl.col("end_time").fill_null(pl.lit(window.end)), pl.lit(window.end)).alias("_e"),
    )
    last = local_date(pl.col("_e") - pl.duration(microseconds=1), window.tz)
    split = held.with_columns(pl.date_ranges(local_date(pl.col("_s"), window.tz), last).alias("day")).explode("day")
    part_s = pl.max_horizontal(pl.col("_s"), local_midnight(pl.col("day"), window.tz))
    part_e = pl.min_horizontal(pl.col("_e"), local_midnight(pl.col("day") + pl.lit(_DAY), window.tz))
    hours = pl.col("_gpus") * (part_e - part_s).dt.total_microseconds().cast(pl.Float64) / 3.6e9
    return split.group_by(*_KEY).agg(hours.sum().alias("gpu_hours"))


def _daily_util(inputs: EvaluationInputs, jobs: pl.DataFrame, idle: IdleConfig) -> pl.DataFrame:
    """(day, scenario, team, util_minutes, util_sum, idle_minutes, idle_held_minutes) from the allocated
    GPU-minutes with a value."""
    owners = (
        jobs.sort("submit_time")
        .group_by("cluster", pl.col("job_id").cast(pl.Utf8))
        .agg(pl.col("team").last(), pl.col("scenario").last())
    )
    minutes = (
        minute_digest(inputs, idle)
        .job_days.filter(pl.col("util_minutes") > 0)
        .select("cluster", "job_id", "day", "util_minutes", pl.col("util_sum").alias("_util_sum"), *_IDLE)
    )
    return (
        minutes.join(owners, on=["cluster", "job_id"], how="left")
        .with_columns(pl.col("team").fill_null(UNATTRIBUTED), pl.col("scenario").fill_null(UNATTRIBUTED))
        .group_by(*_KEY)
        .agg(pl.col("util_minutes").sum(), pl.col("_util_sum").sum(), *[pl.col(c).sum() for c in _IDLE])
        .pipe(whole_minutes)
    )


def daily_usage(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """DAILY_USAGE (sla/results.py): one row per (day, scenario, team) with GPUs held or telemetry."""
    window = window_of(inputs)
    jobs = with_overlap(classified_jobs(inputs, config), window)
    out = (
        _daily_hours(jobs, window)
        .join(_daily_util(inputs, jobs, config.idle), on=list(_KEY), how="full", coalesce=True)
        .with_columns(
            pl.col("gpu_hours").fill_null(0.0),
            pl.col("util_minutes").fill_null(0),
            *[pl.col(c).fill_null(0) for c in _IDLE],
            pl.when(pl.col("util_minutes") > 0)
            .then(pl.col("_util_sum") / pl.col("util_minutes"))
            .otherwise(None)
            .alias("util_mean"),
        )
        .sort(*_KEY)
    )
    return out.select([pl.col(n).cast(t) for n, t in DAILY_USAGE.items()])
