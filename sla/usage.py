"""GPU-hours and queue waits per team: what fairness, the review and the quota recommender read.

A queue is "<cluster>/<partition>". GPU-hours are gpus_allocated x the part of [start, end) inside
the evaluation window (a running job holds its GPUs up to the end of the data). Waits are
start - eligible over the records that started in the window.
"""

from __future__ import annotations

import polars as pl

from gpusteward.capacity import held_gpus
from gpusteward.config.schema import Config
from sla.common import classified_jobs, started_in, window_of, with_overlap
from sla.inputs import EvaluationInputs
from sla.results import USAGE

QUEUE_USAGE = pl.Schema(
    {
        "cluster": pl.Utf8,
        "queue": pl.Utf8,  # "<cluster>/<partition>"
        "scenario": pl.Utf8,
        "team": pl.Utf8,
        "gpu_hours": pl.Float64,  # GPU-hours held inside the window
        "jobs": pl.Int64,  # job records that held GPUs in the window
        "started": pl.Int64,  # records that started in the window
        "wait_p95_s": pl.Float64,  # p95 of start - eligible over `started`; null when none
        "wait_max_s": pl.Float64,
    }
)


def queue_name() -> pl.Expr:
    return pl.concat_str(pl.col("cluster"), pl.lit("/"), pl.col("partition").fill_null("?")).alias("queue")


def wait_seconds() -> pl.Expr:
    """start - eligible in seconds; clock skew between scheduler hosts can make it negative, so clip at 0."""
    return ((pl.col("start_time") - pl.col("eligible_time")).dt.total_microseconds() / 1e6).clip(lower_bound=0.0)


def queue_usage(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """One QUEUE_USAGE row per (cluster, queue, scenario, team) with work in the window."""
    window = window_of(inputs)
    jobs = with_overlap(classified_jobs(inputs, config), window).with_columns(
        queue_name(),
        (held_gpus() * pl.col("held_s") / 3600.0).alias("gpu_hours"),
        started_in(window).alias("_started"),
        wait_seconds().alias("_wait"),
    )
    jobs = jobs.filter((pl.col("gpu_hours") > 0) | pl.col("_started"))
    started_wait = pl.col("_wait").filter(pl.col("_started"))
    out = (
        jobs.group_by("cluster", "queue", "scenario", "team")
        .agg(
            pl.col("gpu_hours").sum(),
            (pl.col("gpu_hours") > 0).sum().cast(pl.Int64).alias("jobs"),
            pl.col("_started").sum().cast(pl.Int64).alias("started"),
            started_wait.quantile(0.95, interpolation="linear").alias("wait_p95_s"),
            started_wait.max().alias("wait_max_s"),
        )
        .sort("cluster", "queue", "scenario", "team")
    )
    return out.select([pl.col(n).cast(t) for n, t in QUEUE_USAGE.items()])


def usage_by_team(queues: pl.DataFrame) -> pl.DataFrame:
    """USAGE (sla/results.py): QUEUE_USAGE summed per (cluster, scenario, team)."""
    out = (
        queues.filter(pl.col("jobs") > 0)
        .group_by("cluster", "scenario", "team")
        .agg(pl.col("gpu_hours").sum(), pl.col("jobs").sum())
        .sort("cluster", "scenario", "team")
    )
    return out.select([pl.col(n).cast(t) for n, t in USAGE.items()])
