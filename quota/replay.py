"""What-if replay (pure): the month's job records through a model of the scheduler's limit enforcement.

Each record is replayed with its recorded submit (eligible) time, run time and GPU count, on its
cluster's GPUs, under a given set of account limits (GrpTRES gres/gpu). Whenever GPUs free up or a
job arrives, pending jobs are tried in priority order: the QOS's priority first (as Slurm's
priority/multifactor weighs it), then the record's own priority, then submit time. A job starts when
the cluster has enough free GPUs and its account stays within its limit (Slurm's AssocGrpGRES,
Kueue's nominalQuota); a job that does not fit is passed over and the next one tried (backfill
without reservations). The model knows no nodes (no packing), no preemption and no reservations:
calibration says how far that is from what the scheduler did.

- Records that started before the window keep their recorded start (they are the window's
  starting occupancy); records that never started and ended (cancelled while pending) are left out,
  since their run time is unknown; records still pending at the window's end run for their time limit.
- Calibration: the replay under the current limits against the recorded waits and GPU-hours. A
  prediction's error is the replay-under-current against observed; a plan's effect is the replay
  under the plan against the replay under current limits, so the model's bias is in both.
"""

from __future__ import annotations

import bisect
import heapq
from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

REPLAY_JOBS = pl.Schema(
    {
        "cluster": pl.Utf8,
        "job_id": pl.Int64,
        "account": pl.Utf8,
        "team": pl.Utf8,
        "queue": pl.Utf8,
        "qos_priority": pl.Int64,
        "priority": pl.Int64,
        "submit_s": pl.Float64,  # seconds after the window's start; negative: before it
        "run_s": pl.Float64,  # how long it ran (or its time limit if still pending at the end)
        "gpus": pl.Int64,
        "observed_start_s": pl.Float64,  # null: never started
        "pinned": pl.Boolean,  # started before the window: keeps its recorded start
    }
)

OUTCOMES = pl.Schema(
    {
        "cluster": pl.Utf8,
        "group": pl.Utf8,  # team | queue
        "subject": pl.Utf8,  # the team, or the queue (cluster/partition)
        "jobs": pl.Int64,  # records submitted inside the window
        "wait_p50_s": pl.Float64,
        "wait_p95_s": pl.Float64,
        "gpu_hours": pl.Float64,  # held inside the window
    }
)

Limits = Mapping[tuple[str, str], int | None]
"""(cluster, account) -> GPU limit; None or missing: unlimited."""


def replay_jobs(spans: pl.DataFrame, qos_priority: Mapping[tuple[str, str], int], length_s: float) -> pl.DataFrame:
    """REPLAY_JOBS from sla.contention.SPANS over a window of `length_s` seconds; qos_priority:
    (cluster, QOS) -> the QOS's priority (missing: 0)."""
    started = pl.col("started")
    still_pending = ~started & (pl.col("pend_e") >= length_s) & pl.col("time_limit_min").is_not_null()
    out = spans.filter(started | still_pending).with_columns(
        pl.concat_str(pl.col("cluster"), pl.lit("/"), pl.col("partition").fill_null("?")).alias("queue"),
        pl.when(started).then(pl.col("run_s")).otherwise(None).alias("observed_start_s"),
        (started & (pl.col("run_s") <= 0) & (pl.col("submit_s") < 0)).alias("pinned"),
        pl.when(started).then(pl.col("run_e") - pl.col("run_s"))
        .otherwise(pl.col("time_limit_min").cast(pl.Float64) * 60.0).alias("run_s"),
        pl.col("priority").fill_null(0),
    )
    qos = pl.DataFrame(
        [{"cluster": c, "qos": q, "qos_priority": p} for (c, q), p in qos_priority.items()],
        schema={"cluster": pl.Utf8, "qos": pl.Utf8, "qos_priority": pl.Int64}, orient="row",
    )
    out = out.join(qos, on=["cluster", "qos"], how="left").with_columns(pl.col("qos_priority").fill_null(0))
    return out.select([pl.col(n).cast(t) for n, t in REPLAY_JOBS.items()])


class _Cluster:
    """One cluster's replay state: free GPUs, GPUs per account, pending jobs in priority order."""

    def __init__(self, jobs: pl.DataFrame, gpus: int, limits: Mapping[str, int | None]) -> None:
        n = jobs.height
        self.submit = jobs["submit_s"].to_numpy()
        self.run = jobs["run_s"].to_numpy()
        self.size = jobs["gpus"].to_numpy().astype(int)
        self.account = jobs["account"].fill_null("").to_list()
        self.order = list(zip((-jobs["qos_priority"]).to_list(), (-jobs["priority"]).to_list(), self.submit.tolist(),
                              range(n), strict=True))
        self.limits = limits
        self.start = np.full(n, np.inf)
        self.events: list[tuple[float, int, int]] = []  # (time, 0 end / 1 arrival, job)
        self.free = gpus
        self.used: dict[str, int] = {}
        self.pending: list[tuple[Any, ...]] = []
        observed = jobs["observed_start_s"].to_numpy()
        for i, pinned in enumerate(jobs["pinned"].to_list()):
            if pinned:
                self.begin(i, float(observed[i]))
            else:
                heapq.heappush(self.events, (float(self.submit[i]), 1, i))

    def fits(self, i: int) -> bool:
        cap = self.limits.get(self.account[i])
        within = cap is None or self.used.get(self.account[i], 0) + self.size[i] <= cap
        return bool(self.size[i] <= self.free and within)

    def begin(self, i: int, t: float) -> None:
        self.start[i] = t
        self.free -= int(self.size[i])
        self.used[self.account[i]] = self.used.get(self.account[i], 0) + int(self.size[i])
        heapq.heappush(self.events, (t + float(self.run[i]), 0, i))

    def step(self) -> None:
        """Everything that happens at the next event time: ends free GPUs, arrivals queue, then a pass."""
        t = self.events[0][0]
        freed = False
        arrived: list[int] = []
        while self.events and self.events[0][0] == t:
            _t, kind, i = heapq.heappop(self.events)
            if kind == 0:
                self.free += int(self.size[i])
                self.used[self.account[i]] -= int(self.size[i])
                freed = True
            else:
                arrived.append(i)
        for i in arrived:
            bisect.insort(self.pending, self.order[i])
        # Nothing freed: only the new arrivals can start (nothing else changed since the last pass).
        candidates = list(self.pending) if freed else sorted(self.order[i] for i in arrived)
        for key in candidates:
            if self.free <= 0:
                break
            if self.fits(key[3]):
                self.begin(key[3], t)
                self.pending.pop(bisect.bisect_left(self.pending, key))


def replay_cluster(jobs: pl.DataFrame, gpus: int, limits: Mapping[str, int | None]) -> np.ndarray:
    """Replayed start (seconds) of each of one cluster's REPLAY_JOBS rows; inf: never started."""
    state = _Cluster(jobs, gpus, limits)
    while state.events:
        state.step()
    return state.start


def replay(jobs: pl.DataFrame, gpus: Mapping[str, int], limits: Limits) -> pl.DataFrame:
    """REPLAY_JOBS plus `replayed_start_s`, every cluster with a known GPU count replayed."""
    parts = []
    for cluster in sorted(gpus):
        mine = jobs.filter(pl.col("cluster") == cluster)
        if mine.is_empty():
            continue
        mine_limits = {a: v for (c, a), v in limits.items() if c == cluster}
        parts.append(mine.with_columns(pl.Series("replayed_start_s", replay_cluster(mine, gpus[cluster], mine_limits))))
    if not parts:
        return jobs.with_columns(pl.lit(None, dtype=pl.Float64).alias("replayed_start_s")).head(0)
    return pl.concat(parts)


def outcomes(jobs: pl.DataFrame, start_column: str, length_s: float) -> pl.DataFrame:
    """OUTCOMES of records with starts in `start_column` (observed_start_s or replayed_start_s).

    Waits are of records submitted inside the window, censored at its end (a job still waiting then
    counts the wait it had so far); GPU-hours are those held inside the window."""
    begin = pl.col(start_column).fill_null(np.inf).fill_nan(np.inf)
    frame = jobs.with_columns(
        (pl.min_horizontal(begin, pl.lit(length_s)) - pl.col("submit_s")).clip(lower_bound=0.0).alias("_wait"),
        ((pl.min_horizontal(begin + pl.col("run_s"), pl.lit(length_s)) - pl.max_horizontal(begin, pl.lit(0.0)))
         .clip(lower_bound=0.0) * pl.col("gpus") / 3600.0).fill_nan(0.0).alias("_gpu_hours"),
        (pl.col("submit_s") >= 0).alias("_inside"),
    )
    inside_wait = pl.col("_wait").filter(pl.col("_inside"))
    parts = []
    for group in ("team", "queue"):
        parts.append(
            frame.group_by("cluster", group).agg(
                pl.col("_inside").sum().cast(pl.Int64).alias("jobs"),
                inside_wait.quantile(0.5, interpolation="linear").alias("wait_p50_s"),
                inside_wait.quantile(0.95, interpolation="linear").alias("wait_p95_s"),
                pl.col("_gpu_hours").sum().alias("gpu_hours"),
            ).with_columns(pl.lit(group).alias("group"), pl.col(group).alias("subject"))
        )
    out = pl.concat([p.select(list(OUTCOMES)) for p in parts])
    return out.select([pl.col(n).cast(t) for n, t in OUTCOMES.items()]).sort("cluster", "group", "subject")
