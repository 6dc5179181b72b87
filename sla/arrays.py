"""Job arrays of the month: each array's tasks grouped, with their waits and outcomes.

Slurm gives every array task its own job id (JobIDRaw) and record, so per-job views show an array of
200 tasks as 200 unrelated rows. A platform engineer reads an array as one submission: how many
tasks, how long they waited to start, how many completed, failed or were cancelled. Tasks are named
as sacct prints them (`123_4`, `sla.common.job_label`).

A task counts when one of its records was submitted, started or ended in the window; its outcome is
that of its latest record (a requeued task that then completed is completed). Waits are those of
records that started in the window, as the queue evaluator counts them.
"""

from __future__ import annotations

import polars as pl

from gpusteward.config.schema import Config
from gpusteward.domain import FAILURE_STATES
from sla.common import base_state, classified_jobs, ended_in, job_label, started_in, window_of
from sla.inputs import EvaluationInputs
from sla.results import ARRAYS
from sla.usage import queue_name, wait_seconds

_NOT_ENDED = ("PENDING", "RUNNING", "REQUEUED", "SUSPENDED", "CONFIGURING", "COMPLETING", "RESIZING")


def _outcome() -> pl.Expr:
    state = pl.col("_state")
    return (
        pl.when(pl.col("end_time").is_null() | state.is_in(_NOT_ENDED))
        .then(pl.lit("open"))
        .when(state == "COMPLETED")
        .then(pl.lit("completed"))
        .when(state.is_in(sorted(FAILURE_STATES)))
        .then(pl.lit("failed"))
        .when(state == "CANCELLED")
        .then(pl.lit("cancelled"))
        .otherwise(pl.lit("other"))  # PREEMPTED without a later record, and states sacct may add
    )


def array_summary(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """ARRAYS (sla/results.py): one row per array with a task in the window, most tasks first."""
    window = window_of(inputs)
    jobs = classified_jobs(inputs, config)
    if "array_job_id" not in jobs.columns:
        return pl.DataFrame(schema=ARRAYS)
    submitted = pl.col("submit_time").is_between(window.start, window.end, closed="left")
    in_window = submitted | started_in(window) | ended_in(window)
    tasks = jobs.filter(pl.col("array_job_id").is_not_null() & in_window).with_columns(
        queue_name(),
        base_state().alias("_state"),
        job_label().alias("_label"),
        pl.when(started_in(window)).then(wait_seconds()).otherwise(None).alias("_wait"),
    )
    if tasks.is_empty():
        return pl.DataFrame(schema=ARRAYS)
    key = ["cluster", "array_job_id"]
    latest = (
        tasks.sort("submit_time", nulls_last=False)
        .group_by([*key, "array_task_id"], maintain_order=True)
        .last()
        .with_columns(_outcome().alias("_outcome"))
    )
    outcomes = latest.group_by(key).agg(
        pl.len().cast(pl.Int64).alias("tasks"),
        *((pl.col("_outcome") == o).sum().cast(pl.Int64).alias(o) for o in ("completed", "failed", "cancelled")),
        (pl.col("_outcome").is_in(["open", "other"])).sum().cast(pl.Int64).alias("other"),
    )
    waits = tasks.group_by(key).agg(
        pl.col("name").drop_nulls().first().alias("name"),
        pl.col("scenario").first(),
        pl.col("team").first(),
        pl.col("queue").first(),
        pl.len().cast(pl.Int64).alias("records"),
        pl.col("_wait").is_not_null().sum().cast(pl.Int64).alias("started"),
        pl.col("_wait").quantile(0.5, interpolation="linear").alias("wait_p50_s"),
        pl.col("_wait").max().alias("wait_max_s"),
        pl.col("_label").sort_by(pl.col("_wait").fill_null(-1.0), descending=True).first().alias("longest_wait_task"),
    )
    out = waits.join(outcomes, on=key).sort(["tasks", "cluster", "array_job_id"], descending=[True, False, False])
    return out.with_columns(
        pl.when(pl.col("started") > 0).then(pl.col("longest_wait_task")).otherwise(None).alias("longest_wait_task")
    ).select([pl.col(n).cast(t) for n, t in ARRAYS.items()])
