"""GPUs allocated and their engine activity per cluster and hour of the pool's zone, for the dashboards.

Counted from the GPU-minutes the exporters reported (the `gpu_minutes` view), so an hour in which a
cluster reported nothing has no row: no data, never 0. Per hour:
- reporting_gpus: GPU-minutes reported / 60, the GPUs the cluster reported on average over the hour,
  in whole-GPU equivalents (a MIG instance's minute counts its share of the card, `gpus.share`);
- allocated_gpus: of those, the GPU-minutes a job held (the minute carries its job id) / 60;
- inference_gpus: of those, the minutes held by online_inference jobs (the job's latest record,
  classified by the configured rules, as the evaluators do), so the chart can set the rest against
  the inference reserve;
- util_minutes, util_mean: the allocated minutes with a utilisation value and their mean 0..1, by the
  evaluation's definition (sla.minute_digest.utilisation: GR_ENGINE_ACTIVE when present, else
  GPU_UTIL / 100), so the hours of a day add up to the day's allocated minutes and mean utilisation
  in sla.daily; engine_minutes says how many of them were GR_ENGINE_ACTIVE.

DuckDB reduces the month's minutes to (cluster, 15-minute slot, job) rows first: every zone's hours
begin on a quarter hour of UTC, so the slots fold into local hours exactly, and no minute row leaves
the warehouse.
"""

from __future__ import annotations

import polars as pl

from gpusteward import tables
from gpusteward.attribution import classify_jobs
from gpusteward.config.schema import Config
from gpusteward.domain import Month, Scenario
from warehouse.series import local_hour
from warehouse.store import Warehouse

ALLOCATION_HOURLY = tables.schema({
    "hour": tables.TS,  # start of the hour in `zone`, as a naive UTC instant
    "zone": pl.Utf8,
    "cluster": pl.Utf8,
    "reporting_gpus": pl.Float64,  # GPU-minutes reported in the hour / 60
    "allocated_gpus": pl.Float64,  # ... of which a job held / 60
    "inference_gpus": pl.Float64,  # ... of which an online_inference job held / 60
    "util_minutes": pl.Int64,  # allocated GPU-minutes with a utilisation value
    "engine_minutes": pl.Int64,  # ... whose value was GR_ENGINE_ACTIVE
    "util_mean": pl.Float64,  # mean utilisation 0..1 of those minutes; null when none
})

SLOT_S = 900
_SLOTS = f"""
    WITH m AS (
        SELECT gpu_key, epoch_us(ts) // {SLOT_S * 1_000_000} AS slot, job_id, gr_engine_active IS NOT NULL AS engine,
               coalesce(gr_engine_active::DOUBLE, gpu_util::DOUBLE / 100.0) AS u
        FROM gpu_minutes WHERE ts >= ? AND ts < ?
    ),
    v AS (SELECT *, job_id IS NOT NULL AND NOT isnan(u) AS valued FROM m)
    SELECT g.cluster, v.slot, v.job_id,
           sum(g.share) AS minutes,
           sum(valued::INTEGER) AS util_minutes,
           sum((valued AND engine)::INTEGER) AS engine_minutes,
           coalesce(sum(CASE WHEN valued THEN u END), 0.0) AS util_sum
    FROM v JOIN gpus g USING (gpu_key)
    GROUP BY g.cluster, v.slot, v.job_id
"""  # noqa: S608 - a number of ours
"""(cluster, 15-minute slot as its number since the epoch, job) with minutes and utilisation sums: an integer
slot and plain sums cost a quarter less than a timestamp bucket and filtered counts (44.6M rows: 3.8 s
against 5.3 s of CPU, measured on the 1,000-GPU month)."""

# The latest record of each job that overlaps the month names its scenario (as sla.daily's owners).
_JOBS = """
    SELECT cluster, CAST(job_id AS VARCHAR) AS job_id, partition, qos, account
    FROM jobs WHERE submit_time < ? AND (end_time IS NULL OR end_time >= ?)
    QUALIFY row_number() OVER (PARTITION BY cluster, job_id ORDER BY submit_time DESC) = 1
"""


def allocation_hourly(wh: Warehouse, month: Month, config: Config) -> pl.DataFrame:
    """ALLOCATION_HOURLY for `month`, hours of its own time zone; one row per cluster and hour with data."""
    lo, hi = month.start.replace(tzinfo=None), month.end.replace(tzinfo=None)
    slots = wh.query(_SLOTS, [lo, hi])
    if slots.height == 0:
        return tables.empty(ALLOCATION_HOURLY)
    jobs = classify_jobs(config, wh.query(_JOBS, [hi, lo])).select(
        "cluster", "job_id", (pl.col("scenario") == Scenario.ONLINE_INFERENCE.value).alias("_inference")
    )
    held = pl.col("job_id").is_not_null()
    out = (
        slots.join(jobs, on=["cluster", "job_id"], how="left")
        .with_columns(local_hour(pl.from_epoch(pl.col("slot") * SLOT_S, time_unit="s").cast(tables.TS), month.tz)
                      .alias("hour"))
        .group_by("hour", "cluster")
        .agg(
            (pl.col("minutes").sum() / 60.0).alias("reporting_gpus"),
            (pl.col("minutes").filter(held).sum() / 60.0).alias("allocated_gpus"),
            (pl.col("minutes").filter(pl.col("_inference").fill_null(value=False)).sum() / 60.0)
            .alias("inference_gpus"),
            pl.col("util_minutes").sum(),
            pl.col("engine_minutes").sum(),
            pl.col("util_sum").sum(),
        )
        .with_columns(
            pl.lit(month.tz).alias("zone"),
            pl.when(pl.col("util_minutes") > 0).then(pl.col("util_sum") / pl.col("util_minutes")).alias("util_mean"),
        )
        .sort("hour", "cluster")
    )
    return tables.conform(out, ALLOCATION_HOURLY)
