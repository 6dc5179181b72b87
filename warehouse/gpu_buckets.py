"""Each GPU's telemetry in short buckets: what the heatmap and a job's timeline read, never minute rows.

A bucket is `BUCKET_MINUTES` of one GPU and one job label (a bucket in which the GPU changed jobs is
two rows, so a job's timeline holds only its own minutes). Each measure keeps its mean and the
minutes it was present in: "no data" is a missing row, or a measure's zero minutes with a null
mean, never a zero. Coarser cells (an hour of the heatmap) are means weighted by those minutes
(`coarsen`), so they equal the mean of the minute rows they cover.

The minute rows are read through the `gpu_minutes` view, which owns their unpacking (migration 011);
the change fingerprint of a day counts the packed table's own rows, as `minute_chunks.host_chunks`
does, since counting needs no unpacking.
"""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl

from gpusteward import tables
from warehouse.store import Warehouse

BUCKET_MINUTES = 5
"""Five minutes: divides the hour of every time zone (offsets are whole quarter hours), and a
job of an hour still shows a dozen points. A day of 1,000 GPUs is about 290,000 rows."""
EPOCH_DAY = date(1970, 1, 1)

GPU_BUCKETS = tables.schema({
    "cluster": pl.Utf8,
    "host": pl.Utf8,
    "gpu": pl.Int16,
    "bucket": tables.TS,  # start of the bucket, naive UTC, a multiple of BUCKET_MINUTES since the epoch
    "job_id": pl.Utf8,  # the minutes' job label (hpc_job); null: no job held the GPU
    "minutes": pl.Int16,  # minutes with a telemetry row
    "engine_minutes": pl.Int16,  # ... with DCGM_FI_PROF_GR_ENGINE_ACTIVE
    "engine_mean": pl.Float64,  # mean engine activity 0..1 over engine_minutes; null when none
    "memory_minutes": pl.Int16,  # ... with framebuffer used
    "memory_mean_mib": pl.Float64,  # mean of the minutes' framebuffer used (each the minute's max)
    "power_minutes": pl.Int16,
    "power_mean_w": pl.Float64,
})
MEASURES = (("engine_minutes", "engine_mean"), ("memory_minutes", "memory_mean_mib"), ("power_minutes", "power_mean_w"))
"""(minutes, mean) pairs: a mean is weighted by its own minutes when buckets are merged."""

GPU_INVENTORY = tables.schema({
    "cluster": pl.Utf8,
    "host": pl.Utf8,
    "gpu": pl.Int16,
    "model_name": pl.Utf8,
    "first_seen": tables.TS,
    "last_seen": tables.TS,
    # whole-GPU equivalents of the row: 1, or a MIG instance's slices of its card (1/7 ...); null in a read
    # model published before it was kept: count 1
    "share": pl.Float64,
})


def day_fingerprints(wh: Warehouse) -> dict[date, str]:
    """Per UTC day with GPU-minutes: a fingerprint of its rows. Minute rows are only ever added (ingest
    skips a GPU-minute already stored), so a day whose count and key sums are unchanged holds the same
    rows and its buckets need not be computed again."""
    rows = wh.query(
        "SELECT minute // 1440 AS d, count(*) AS n, sum(gpu_key)::BIGINT AS k,"
        " sum(coalesce(job_key, 0))::BIGINT AS j FROM gpu_minute_rows GROUP BY d ORDER BY d"
    )
    return {
        EPOCH_DAY + timedelta(days=int(d)): f"b{BUCKET_MINUTES}-{n}-{k}-{j}"
        for d, n, k, j in rows.iter_rows()
    }


def gpu_buckets(wh: Warehouse, lo: datetime, hi: datetime) -> pl.DataFrame:
    """GPU_BUCKETS of the minutes in [lo, hi) (naive UTC, whole buckets), by GPU and time."""
    frame = wh.query(
        f"""
        SELECT g.cluster, g.host, g.gpu, time_bucket(INTERVAL {BUCKET_MINUTES} MINUTE, m.ts) AS bucket, m.job_id,
               count(*) AS minutes,
               count(m.gr_engine_active) AS engine_minutes, avg(m.gr_engine_active) AS engine_mean,
               count(m.fb_used_mib) AS memory_minutes, avg(m.fb_used_mib) AS memory_mean_mib,
               count(m.power_w) AS power_minutes, avg(m.power_w) AS power_mean_w
        FROM gpu_minutes m JOIN gpus g USING (gpu_key)
        WHERE m.ts >= ? AND m.ts < ?
        GROUP BY ALL
        ORDER BY cluster, host, gpu, bucket, job_id NULLS FIRST
        """,  # noqa: S608 - BUCKET_MINUTES is a constant
        [lo, hi],
    )
    return tables.conform(frame, GPU_BUCKETS) if frame.height else tables.empty(GPU_BUCKETS)


def gpu_inventory(wh: Warehouse) -> pl.DataFrame:
    """Every GPU (or MIG instance) the warehouse knows, with when it was first and last seen and its whole-GPU
    share: the heatmap's rows."""
    frame = wh.query(
        "SELECT cluster, host, gpu, model_name, first_seen, last_seen, share FROM gpus ORDER BY cluster, host, gpu"
    )
    return tables.conform(frame, GPU_INVENTORY) if frame.height else tables.empty(GPU_INVENTORY)


def day_span(day: date) -> tuple[datetime, datetime]:
    start = datetime(day.year, day.month, day.day)
    return start, start + timedelta(days=1)


def coarsen(buckets: pl.DataFrame, every: str, tz: str = "UTC", *, by_job: bool = False) -> pl.DataFrame:
    """GPU_BUCKETS merged into cells of `every` ("1h") that begin on `tz`'s clock; each mean weighted by
    its minutes, so a cell's mean is the mean of the minute rows behind it. A cell with no minutes of a
    measure has a null mean. `bucket` is the cell's start (naive UTC); job labels are merged unless
    `by_job`."""
    start = pl.col("bucket")
    if tz != "UTC":
        local = start.dt.replace_time_zone("UTC").dt.convert_time_zone(tz)
        start = local.dt.truncate(every).dt.convert_time_zone("UTC").dt.replace_time_zone(None)
    else:
        start = start.dt.truncate(every)
    keys = ["cluster", "host", "gpu", "bucket", *(["job_id"] if by_job else [])]
    weighted = [
        (pl.col(mean) * pl.col(minutes)).sum().alias(f"_{mean}") for minutes, mean in MEASURES
    ]
    grouped = (
        buckets.with_columns(start.alias("bucket"))
        .group_by(keys)
        .agg(pl.col("minutes").sum(), *[pl.col(minutes).sum() for minutes, _ in MEASURES], *weighted)
        .with_columns(
            pl.when(pl.col(minutes) > 0).then(pl.col(f"_{mean}") / pl.col(minutes)).alias(mean)
            for minutes, mean in MEASURES
        )
        .sort(keys, nulls_last=False)
    )
    columns = [c for c in GPU_BUCKETS.names() if c in grouped.columns]
    return grouped.select(
        [pl.col(c).cast(pl.Int32) if c.endswith("minutes") else pl.col(c) for c in columns]
    )
