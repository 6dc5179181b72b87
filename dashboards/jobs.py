"""A month's jobs, one row per job, for the drill-down from a team to its jobs (pure: frames in, frames out).

Figures follow the evaluation's definitions, so a team's jobs add up to what the review says of it:
GPU-hours are whole-GPU equivalents (gpusteward.capacity.held_gpus: a 1g.10gb MIG slice is 1/7 of a
GPU, a GPU on a `[[capacity.shared]]` node 1/replicas) x the part of each record's [start, end)
inside the month's window (sla/usage.py; a running job holds its GPUs up to the end of the
telemetry); idle GPU-hours are the evaluation's IDLE_BY_JOB idle and idle-held minutes, whole-GPU
equivalents as well; the queue wait is start - eligible of each
record that started in the window, clipped at 0, summed over a requeued job's records; preemptions
are the ledger's preemption lines of the job. Teams and scenarios come from the configured rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from gpusteward import tables
from gpusteward.attribution import classify_jobs
from gpusteward.capacity import held_gpus, with_shared_gpus
from gpusteward.config.schema import Config
from gpusteward.domain import FAILURE_STATES, Month
from sla.common import Window, base_state, job_label, naive_utc, started_in, with_overlap
from sla.usage import queue_name, wait_seconds

JOB_ROWS = tables.schema({
    "cluster": pl.Utf8,
    "job_id": pl.Int64,
    "job": pl.Utf8,  # as sacct names it: 123_4 for an array task
    "name": pl.Utf8,
    "user": pl.Utf8,
    "account": pl.Utf8,
    "team": pl.Utf8,
    "scenario": pl.Utf8,
    "queue": pl.Utf8,
    "records": pl.Int64,
    "gpus": pl.Float64,  # whole-GPU equivalents held (the most of any record)
    "first_start": tables.TS,
    "last_end": tables.TS,
    "gpu_hours": pl.Float64,
    "wait_s": pl.Float64,  # null: no record started in the window
    "gpu_minutes": pl.Int64,  # GPU-minutes with telemetry, whole-GPU equivalents (IDLE_BY_JOB)
    "idle_hours": pl.Float64,  # idle + idle-held GPU-hours
    "idle_held_hours": pl.Float64,
    "no_data_hours": pl.Float64,
    "idle_share": pl.Float64,  # idle GPU-minutes / GPU-minutes with telemetry; null without telemetry
    "state": pl.Utf8,  # the latest record's state (first word), RUNNING or PENDING while open
    "exit_code": pl.Int32,
    "exit_signal": pl.Int32,
    "preemptions": pl.Int64,
})
MINUTE = timedelta(minutes=1)


def window(month: Month, status: Mapping[str, Any]) -> Window:
    """The evaluation's window of `month`: its start to its end or the minute after the last GPU-minute."""
    start, end = naive_utc(month.start), naive_utc(month.end)
    held = status.get("tables")
    entry = held.get("gpu_minutes") if isinstance(held, Mapping) else None
    last = entry.get("max_ts") if isinstance(entry, Mapping) else None
    if isinstance(last, str) and last:
        end = min(end, datetime.fromisoformat(last) + MINUTE)
    return Window(start, max(start, end), month.tz)


def outcome() -> pl.Expr:
    """The record's state as one word: sacct's first word, RUNNING or PENDING while it has no end."""
    return (
        pl.when(pl.col("end_time").is_null() & pl.col("start_time").is_not_null()).then(pl.lit("RUNNING"))
        .when(pl.col("end_time").is_null()).then(pl.lit("PENDING"))
        .otherwise(base_state())
    )


def record_rows(records: pl.DataFrame) -> pl.DataFrame:
    """JOBS records with their `state` (as `outcome`) and `wait_s` (null until started)."""
    return tables.conform(records, tables.JOBS).with_columns(
        outcome().alias("state"),
        pl.when(pl.col("start_time").is_not_null()).then(wait_seconds()).alias("wait_s"),
    )


def job_rows(records: pl.DataFrame, idle: pl.DataFrame, ledger: pl.DataFrame, config: Config,
             span: Window) -> pl.DataFrame:
    """JOB_ROWS: one row per (cluster, job id) of `records` (JOBS), busiest first."""
    if records.is_empty():
        return tables.empty(JOB_ROWS)
    classified = classify_jobs(config, tables.conform(records, tables.JOBS))
    jobs = with_overlap(with_shared_gpus(classified, config.capacity.shared), span).with_columns(
        queue_name(),
        (held_gpus() * pl.col("held_s") / 3600.0).alias("_gpu_hours"),
        held_gpus().alias("_gpus"),
        pl.when(started_in(span)).then(wait_seconds()).alias("_wait"),
        outcome().alias("_state"),
        job_label().alias("_label"),
    )
    per_job = (
        jobs.sort("submit_time")
        .group_by("cluster", "job_id")
        .agg(
            pl.col("_label").last().alias("job"),
            pl.col("name").last(), pl.col("user").last(), pl.col("account").last(), pl.col("team").last(),
            pl.col("scenario").last(),
            pl.col("queue").last(), pl.len().cast(pl.Int64).alias("records"),
            pl.col("_gpus").max().alias("gpus"),
            pl.col("start_time").min().alias("first_start"), pl.col("end_time").max().alias("last_end"),
            pl.col("_gpu_hours").sum().alias("gpu_hours"),
            pl.when(pl.col("_wait").is_not_null().any()).then(pl.col("_wait").sum()).alias("wait_s"),
            pl.col("_state").last().alias("state"),
            pl.col("exit_code").last(), pl.col("exit_signal").last(),
        )
    )
    idle_cols = idle.select(
        "cluster", pl.col("job_id").cast(pl.Int64, strict=False), "gpu_minutes",
        ((pl.col("idle_minutes") + pl.col("idle_held_minutes")) / 60).alias("idle_hours"),
        (pl.col("idle_held_minutes") / 60).alias("idle_held_hours"),
        (pl.col("no_data_minutes") / 60).alias("no_data_hours"),
        pl.when(pl.col("gpu_minutes") > 0)
        .then((pl.col("idle_minutes") + pl.col("idle_held_minutes")) / pl.col("gpu_minutes"))
        .alias("idle_share"),
    ).group_by("cluster", "job_id").agg(pl.all().first())
    preempted = ledger.filter(pl.col("action") == "preemption").group_by("cluster", "job_id").agg(
        pl.len().cast(pl.Int64).alias("preemptions"))
    out = (
        per_job.join(idle_cols, on=["cluster", "job_id"], how="left")
        .join(preempted, on=["cluster", "job_id"], how="left")
        .with_columns(pl.col("preemptions").fill_null(0))
        .sort(["gpu_hours", "cluster", "job_id"], descending=[True, False, False])
    )
    return tables.conform(out, JOB_ROWS)


def focused(rows: pl.DataFrame, focus: str) -> pl.DataFrame:
    """The jobs a focus is about: idle (left GPUs idle), wait (started after a wait), preempted, failed."""
    if focus == "idle":
        return rows.filter(pl.col("idle_hours") > 0)
    if focus == "wait":
        return rows.filter(pl.col("wait_s").is_not_null())
    if focus == "preempted":
        return rows.filter(pl.col("preemptions") > 0)
    if focus == "failed":
        return rows.filter(pl.col("state").is_in(sorted(FAILURE_STATES)))
    return rows


_OUTCOME_ORDER = dict.fromkeys(FAILURE_STATES, 0) | {"PREEMPTED": 1, "REQUEUED": 1, "CANCELLED": 2, "RUNNING": 3,
                                                     "PENDING": 4, "COMPLETED": 5}


def ordered(rows: pl.DataFrame, sort: str) -> pl.DataFrame:
    """Largest first: GPU-hours, idle GPU-hours, wait; by outcome: failures first, then interruptions."""
    tie = ["cluster", "job_id"]
    if sort == "outcome":
        rank = pl.col("state").replace_strict(_OUTCOME_ORDER, default=6, return_dtype=pl.Int32)
        return rows.with_columns(rank.alias("_rank")).sort(["_rank", "gpu_hours", *tie],
                                                            descending=[False, True, False, False]).drop("_rank")
    column = {"idle": "idle_hours", "wait": "wait_s"}.get(sort, "gpu_hours")
    return rows.sort([column, *tie], descending=[True, False, False], nulls_last=True)


def team_rows(rows: pl.DataFrame) -> pl.DataFrame:
    """Per team: jobs, GPU-hours, idle GPU-hours and share, the longest wait, failed jobs."""
    return (
        rows.group_by("team")
        .agg(
            pl.len().cast(pl.Int64).alias("jobs"),
            pl.col("gpu_hours").sum(),
            pl.col("idle_hours").sum(),
            pl.col("gpu_minutes").sum(),
            pl.col("wait_s").max().alias("wait_max_s"),
            pl.col("state").is_in(sorted(FAILURE_STATES)).sum().cast(pl.Int64).alias("failed"),
            pl.col("preemptions").sum(),
        )
        .with_columns(
            pl.when(pl.col("gpu_minutes") > 0).then(pl.col("idle_hours") * 60 / pl.col("gpu_minutes"))
            .alias("idle_share")
        )
        .sort(["gpu_hours", "team"], descending=[True, False])
    )


PICK_SORTS = ("gpu_hours", "idle_share", "wait")
"""What the job page's picker lists first: the most GPU-hours, the largest idle share, the longest wait."""
PICK_SIZES = (25, 50, 100, 200)
"""How many jobs the picker lists at most: a month holds thousands (6,368 on the demo month, 135,000 at 1,000
GPUs), and a picker of every one sends them all to the browser on every run."""
_PICK_COLUMN = {"gpu_hours": "gpu_hours", "idle_share": "idle_share", "wait": "wait_s"}


def picked(rows: pl.DataFrame, *, account: str | None, state: str | None, sort: str,
           limit: int) -> tuple[pl.DataFrame, int]:
    """The first `limit` of `rows` (JOB_ROWS) of `account` and `state` (None: any), largest first by `sort`
    (PICK_SORTS; jobs without the figure last), and how many matched the filters."""
    if account is not None:
        rows = rows.filter(pl.col("account") == account)
    if state is not None:
        rows = rows.filter(pl.col("state") == state)
    column = _PICK_COLUMN.get(sort, "gpu_hours")
    top = rows.sort([column, "cluster", "job_id"], descending=[True, False, False], nulls_last=True).head(limit)
    return top, rows.height


def key_of(cluster: object, job_id: object) -> str:
    """A job's `<cluster>/<job id>`, as the `job` query parameter names it (gpusteward/links.py)."""
    return f"{cluster}/{job_id}"


def found(rows: pl.DataFrame, text: str) -> list[str]:
    """Keys of the jobs in `rows` that `text` names: `<cluster>/<id>`, the job id as the scheduler numbers it
    (JobIDRaw), or an array task as sacct writes it (123_4); several when clusters reuse an id."""
    wanted = text.strip()
    cluster, _, ident = wanted.rpartition("/")
    if not ident:
        return []
    match = pl.col("job") == ident
    if ident.isdigit() and len(ident) <= 18:  # an Int64
        match = match | (pl.col("job_id") == int(ident))
    if cluster:
        match = match & (pl.col("cluster") == cluster)
    hits = rows.filter(match).sort("cluster", "job_id")
    return [key_of(c, j) for c, j in zip(hits["cluster"].to_list(), hits["job_id"].to_list(), strict=True)]
