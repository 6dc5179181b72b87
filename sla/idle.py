"""Idle GPU-minutes per job and per GPU: busy, idle, idle while holding memory, or unknown.

A job's minutes are whole-GPU equivalents (sla.minute_digest): an hour idle on a 1g.10gb MIG
instance of an H100 is 60/7 idle GPU-minutes, rounded to the minute per job. A GPU's own minutes
(idle_by_gpu) are that row's, one GPU or one instance, unweighted.

The states of single minutes are sla.idle_states'; this module counts them from the month's
minute digest (sla.minute_digest). Minutes a job held GPUs but no telemetry row (or no
utilisation) exists are "no data": they are counted against the job (gpus_allocated x time held,
minus the minutes with data) and are never idle or busy.
"""

from __future__ import annotations

from collections.abc import Collection

import polars as pl

from gpusteward.capacity import held_gpus
from gpusteward.config.schema import Config
from gpusteward.domain import UNATTRIBUTED
from gpusteward.tables import conform
from sla.common import MINUTE, Window, classified_jobs, window_of, with_overlap
from sla.inputs import GPU_INVENTORY, EvaluationInputs
from sla.minute_digest import minute_digest, whole_minutes
from sla.results import IDLE_BY_GPU, IDLE_BY_JOB

_GPU = ("cluster", "host", "gpu")


def _expected_minutes(inputs: EvaluationInputs, config: Config, window: Window) -> pl.DataFrame:
    """Allocated GPU-minutes per (cluster, job id) from the job records: whole-GPU equivalents held x time
    held (a 1g.10gb MIG slice 1/7 of a GPU, a time-sliced GPU 1/replicas)."""
    jobs = with_overlap(classified_jobs(inputs, config), window)
    jobs = jobs.filter(pl.col("gpus_allocated").fill_null(0) > 0).with_columns(
        pl.col("job_id").cast(pl.Utf8),
        (held_gpus() * pl.col("held_s") / 60.0)
        .round(0)
        .cast(pl.Int64)
        .alias("_expected"),
    )
    # A requeued job has several records; the latest one names its current team and scenario.
    arrays = [pl.col(c).last() for c in ("array_job_id", "array_task_id") if c in jobs.columns]
    return (
        jobs.sort("submit_time")
        .group_by("cluster", "job_id")
        .agg(pl.col("_expected").sum(), pl.col("team").last(), pl.col("scenario").last(), *arrays)
    )


def idle_by_job(
    inputs: EvaluationInputs, config: Config, *, scenarios: Collection[str] | None = None
) -> pl.DataFrame:
    """IDLE_BY_JOB: one row per (cluster, job) that held GPUs in the window, optionally only `scenarios`."""
    window = window_of(inputs)
    expected = _expected_minutes(inputs, config, window)
    counted = whole_minutes(minute_digest(inputs, config.idle).per_job())
    if scenarios is not None:
        expected = expected.filter(pl.col("scenario").is_in(list(scenarios)))
        counted = counted.join(expected.select("cluster", "job_id"), on=["cluster", "job_id"], how="semi")
    counted = counted.filter(pl.col("gpu_minutes") > 0).select(
        "cluster", "job_id", "gpu_minutes", "busy_minutes", "idle_minutes", "idle_held_minutes",
        pl.col("zero_minutes").alias("zero_activity_minutes"),
        pl.when((pl.col("engine_minutes") > 0) & (pl.col("gpu_util_minutes") > 0))
        .then(pl.lit("mixed"))
        .when(pl.col("engine_minutes") > 0)
        .then(pl.lit("gr_engine_active"))
        .otherwise(pl.lit("gpu_util"))
        .alias("util_source"),
    )
    out = expected.join(counted, on=["cluster", "job_id"], how="full", coalesce=True).with_columns(
        pl.col("team").fill_null(UNATTRIBUTED),
        pl.col("scenario").fill_null(UNATTRIBUTED),
        *[
            pl.col(c).fill_null(0)
            for c in ("gpu_minutes", "busy_minutes", "idle_minutes", "idle_held_minutes", "zero_activity_minutes")
        ],
    )
    # Telemetry for a job the scheduler records do not know still counts, but expects nothing extra.
    out = out.with_columns(
        (pl.col("_expected").fill_null(pl.col("gpu_minutes")) - pl.col("gpu_minutes"))
        .clip(lower_bound=0)
        .cast(pl.Int64)
        .alias("no_data_minutes")
    )
    out = out.filter(pl.col("gpu_minutes") + pl.col("no_data_minutes") > 0).sort("cluster", "job_id")
    return out.select([pl.col(n).cast(t) for n, t in IDLE_BY_JOB.items() if n in out.columns])


_MINUTES = ("gpu_minutes", "busy_minutes", "idle_minutes", "idle_held_minutes", "no_data_minutes")
TASKS_SHOWN = 8  # task ranges named in an array's label; more read `123_[…]`, as the queues section writes it


def task_set(array_job_id: int, tasks: list[int]) -> str:
    """An array's tasks as Slurm compresses them: `123_4`, `123_[1-3,7]`; `123_[…]` past TASKS_SHOWN ranges."""
    ids = sorted(set(tasks))
    if len(ids) == 1:
        return f"{array_job_id}_{ids[0]}"
    ranges: list[str] = []
    first = last = ids[0]
    for task in [*ids[1:], None]:
        if task is not None and task == last + 1:
            last = task
            continue
        ranges.append(str(first) if first == last else f"{first}-{last}")
        if task is not None:
            first = last = task
    return f"{array_job_id}_[{','.join(ranges)}]" if len(ranges) <= TASKS_SHOWN else f"{array_job_id}_[…]"


def idle_by_submission(idle: pl.DataFrame) -> pl.DataFrame:
    """IDLE_BY_JOB with an array's tasks as one row, named as Slurm names them (`job`: `123_[1-3]`,
    a lone task `123_4`, any other job its id), `tasks` counted, minutes summed, team and scenario of
    the task with the most minutes; plus `wasted` (idle and idle-held minutes)."""
    if idle.is_empty():
        return idle.with_columns(pl.lit(None, pl.Utf8).alias("job"), pl.lit(0, pl.Int64).alias("tasks"),
                                 pl.lit(0, pl.Int64).alias("wasted"))
    for column in ("array_job_id", "array_task_id"):
        if column not in idle.columns:
            idle = idle.with_columns(pl.lit(None, pl.Int64).alias(column))
    keyed = idle.with_columns(
        pl.coalesce(pl.col("array_job_id").cast(pl.Utf8), pl.col("job_id")).alias("_key"),
        pl.col("array_task_id").fill_null(-1).alias("_task"),
    ).sort("gpu_minutes", "job_id", descending=[True, False])
    grouped = keyed.group_by("cluster", "_key").agg(
        pl.col("job_id").first(),
        pl.col("array_job_id").first(),
        pl.col("_task"),
        pl.len().cast(pl.Int64).alias("tasks"),
        pl.col("team").first(),
        pl.col("scenario").first(),
        pl.col("util_source").drop_nulls().unique().sort(),
        *[pl.col(c).sum() for c in _MINUTES],
    )
    labels = [
        str(job) if array is None else task_set(array, [t for t in tasks if t >= 0] or [0])
        for job, array, tasks in zip(grouped["job_id"], grouped["array_job_id"], grouped["_task"], strict=True)
    ]
    return grouped.with_columns(
        pl.Series("job", labels, pl.Utf8),
        pl.when(pl.col("util_source").list.len() == 1).then(pl.col("util_source").list.first())
        .when(pl.col("util_source").list.len() > 1).then(pl.lit("mixed")).alias("util_source"),
        (pl.col("idle_minutes").fill_null(0) + pl.col("idle_held_minutes").fill_null(0)).alias("wasted"),
    ).drop("_key", "_task")


def idle_by_gpu(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """IDLE_BY_GPU: every inventory GPU's minutes in the window, each in exactly one category.

    busy, idle and idle-held as for jobs; unallocated: a row with utilisation and no job; no data:
    the minutes the inventory expects (from the later of the window start and first_seen) without a
    row that has a utilisation value. A no-data minute is never idle, busy or unallocated.
    """
    window = window_of(inputs)
    counts = ["busy_minutes", "idle_minutes", "idle_held_minutes", "unallocated_minutes"]
    seen = minute_digest(inputs, config.idle).gpus.filter(pl.sum_horizontal(*counts) > 0).select(*_GPU, *counts)
    inv = conform(inputs.gpus, GPU_INVENTORY).unique(list(_GPU))
    start = pl.max_horizontal(pl.col("first_seen").fill_null(pl.lit(window.start)), pl.lit(window.start))
    expected = inv.select(
        *_GPU, ((pl.lit(window.end) - start) / MINUTE).clip(lower_bound=0).cast(pl.Int64).alias("expected_minutes")
    )
    out = expected.join(seen, on=list(_GPU), how="full", coalesce=True).with_columns(pl.col(counts).fill_null(0))
    total = pl.sum_horizontal(*counts)
    out = out.with_columns(
        pl.col("expected_minutes").fill_null(total),
    ).with_columns((pl.col("expected_minutes") - total).clip(lower_bound=0).alias("no_data_minutes"))
    return out.select([pl.col(n).cast(t) for n, t in IDLE_BY_GPU.items()]).sort(*_GPU)
