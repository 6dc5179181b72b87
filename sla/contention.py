"""Who held and who waited for a cluster's GPUs, second by second (pure).

A month's job records become per-cluster timelines: the window cut at every start, end, submit and
eligible time, and for each piece the GPUs running and pending per key (team, account or QOS). Every
question the fairness evaluator and the quota recommender ask of contention ("was anyone else waiting
while this team held more than its entitlement?", "did this account sit at its limit?") is a sum over
those pieces, so it is exact to the second and costs one sort per cluster, not one pass per minute.

A record pends from eligible (else submit) until it starts (or ends unstarted, e.g. cancelled while
pending), asking for `gpus_requested`; it runs from start to end (a running job up to the window's
end) holding `gpus_allocated`. Both are clipped to the window.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import polars as pl

SPANS = pl.Schema(
    {
        "cluster": pl.Utf8,
        "job_id": pl.Int64,
        "team": pl.Utf8,
        "account": pl.Utf8,
        "qos": pl.Utf8,
        "partition": pl.Utf8,
        "scenario": pl.Utf8,
        "priority": pl.Int64,
        "reason": pl.Utf8,
        "gpus": pl.Int64,  # requested while pending, allocated while running (devices, as GrpTRES counts them)
        "equivalents": pl.Float64,  # the same in whole-GPU equivalents (a MIG slice: its share of a card)
        "pend_s": pl.Float64,  # seconds after the window's start; pend_s == pend_e: never pending inside
        "pend_e": pl.Float64,
        "run_s": pl.Float64,  # run_s == run_e: never running inside the window
        "run_e": pl.Float64,
        "submit_s": pl.Float64,  # unclipped, for the replay: may be negative (before the window)
        "started": pl.Boolean,
        "time_limit_min": pl.Int64,
    }
)


def _seconds(column: str, start: datetime) -> pl.Expr:
    return (pl.col(column) - pl.lit(start, dtype=pl.Datetime("us"))).dt.total_microseconds() / 1e6


def job_spans(jobs: pl.DataFrame, start: datetime, end: datetime) -> pl.DataFrame:
    """SPANS of classified job records (JOBS plus `team`), window [start, end) in naive UTC."""
    length = (end - start).total_seconds()
    for name in ("team", "account", "qos", "partition", "scenario", "reason"):
        if name not in jobs.columns:
            jobs = jobs.with_columns(pl.lit(None, dtype=pl.Utf8).alias(name))
    for name in ("priority", "time_limit_min"):
        if name not in jobs.columns:
            jobs = jobs.with_columns(pl.lit(None, dtype=pl.Int64).alias(name))
    if "gpu_equivalents" not in jobs.columns:
        jobs = jobs.with_columns(pl.lit(None, dtype=pl.Float64).alias("gpu_equivalents"))
    began = pl.col("start_time").is_not_null()
    queued = _seconds("_queued", start)
    started = _seconds("start_time", start)
    ended = pl.coalesce(_seconds("end_time", start), pl.lit(length))
    out = jobs.with_columns(
        pl.coalesce("eligible_time", "submit_time").alias("_queued"),
    ).with_columns(
        queued.clip(0.0, length).alias("pend_s"),
        pl.when(began).then(started).otherwise(ended).clip(0.0, length).alias("pend_e"),
        pl.when(began).then(started.clip(0.0, length)).otherwise(0.0).alias("run_s"),
        pl.when(began).then(ended.clip(0.0, length)).otherwise(0.0).alias("run_e"),
        queued.alias("submit_s"),
        began.alias("started"),
        pl.when(began).then(pl.coalesce("gpus_allocated", "gpus_requested"))
        .otherwise(pl.coalesce("gpus_requested", "gpus_allocated")).fill_null(0).cast(pl.Int64).alias("gpus"),
    ).with_columns(  # clock skew can put a start before its eligible time: never a negative span
        pl.max_horizontal("pend_s", "pend_e").alias("pend_e"), pl.max_horizontal("run_s", "run_e").alias("run_e"),
        pl.when(began).then(pl.col("gpu_equivalents")).otherwise(None)
        .fill_null(pl.col("gpus").cast(pl.Float64)).alias("equivalents"),
    )
    return out.select([pl.col(n).cast(t) for n, t in SPANS.items()]).filter(pl.col("gpus") > 0)


@dataclass
class Timeline:
    """One cluster's pieces: `bounds` (n + 1 second offsets) and per key the GPUs in each of the n pieces."""

    cluster: str
    bounds: np.ndarray
    running: dict[str, np.ndarray] = field(default_factory=dict)
    pending: dict[str, np.ndarray] = field(default_factory=dict)

    @property
    def seconds(self) -> np.ndarray:
        return np.diff(self.bounds)

    def total_running(self) -> np.ndarray:
        return sum(self.running.values(), np.zeros(len(self.bounds) - 1))

    def pieces(self, s: float, e: float) -> slice:
        """The pieces covering [s, e)."""
        return slice(int(np.searchsorted(self.bounds, s, side="right")) - 1, int(np.searchsorted(self.bounds, e)))

    def zeros(self) -> np.ndarray:
        return np.zeros(len(self.bounds) - 1)


def _step_sum(bounds: np.ndarray, starts: np.ndarray, ends: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    delta = np.zeros(len(bounds))
    np.add.at(delta, np.searchsorted(bounds, starts), gpus)
    np.add.at(delta, np.searchsorted(bounds, ends), -gpus)
    return np.cumsum(delta)[:-1]


def timelines(
    spans: pl.DataFrame, by: str, cuts: Mapping[str, np.ndarray] | None = None, *, measure: str = "gpus"
) -> dict[str, Timeline]:
    """Per cluster, the GPUs running and pending per value of column `by` (team, account, qos);
    `cuts` adds boundaries per cluster (e.g. the opening and closing of business hours). `measure`:
    `gpus` counts devices (a MIG instance is one, as Slurm's GrpTRES counts it), `equivalents` whole
    GPUs (entitlements and fairness)."""
    out: dict[str, Timeline] = {}
    for cluster in sorted({c for c in spans["cluster"].unique().to_list() if c is not None}):
        mine = spans.filter(pl.col("cluster") == cluster)
        edges = [mine[c].to_numpy() for c in ("pend_s", "pend_e", "run_s", "run_e")]
        extra = (cuts or {}).get(cluster)
        bounds = np.unique(np.concatenate([*edges, *([] if extra is None else [extra])]))
        if len(bounds) < 2:
            bounds = np.array([0.0, 1.0]) if len(bounds) == 0 else np.array([bounds[0], bounds[0] + 1.0])
        line = Timeline(cluster, bounds)
        for (key,), part in mine.group_by([by], maintain_order=True):
            name = str(key)
            ran = part.filter(pl.col("run_e") > pl.col("run_s"))
            line.running[name] = _step_sum(bounds, ran["run_s"].to_numpy(), ran["run_e"].to_numpy(),
                                           ran[measure].to_numpy().astype(float))
            waited = part.filter(pl.col("pend_e") > pl.col("pend_s"))
            line.pending[name] = _step_sum(bounds, waited["pend_s"].to_numpy(), waited["pend_e"].to_numpy(),
                                           waited[measure].to_numpy().astype(float))
        out[cluster] = line
    return out
