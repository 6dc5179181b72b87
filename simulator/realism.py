"""The simulated month through the same summaries as the public trace authors' tables.

Reference: `realism_reference.json`, copied by `bench/_realism_reference.py` from
../shared/traces: the Acme authors' per-cluster GPU-job table (Seren, Kalos, Philly, Helios;
acme/cluster_summary.csv, NSDI'24), the Helios authors' per-cluster table (Venus, Earth, Saturn,
Uranus; helios/helios_cluster_summary.csv, SC'21) and Acme's DCGM CDFs (acme/util_cdfs.csv).
A statistic's real range is the lowest and highest value those tables publish for it.

How the simulated month is summarised, following those tables: one row per job, its last record
(what `sacct` prints without `--duplicates`, which is what the trace authors read), for every job
whose last record ended inside the month; "failed" is FAILED, TIMEOUT, NODE_FAIL and OUT_OF_MEMORY
together (Helios' and Acme's grouping); GPU time is GPUs x run time of that record. Run and queue
times are of the jobs that started (a job cancelled while pending has neither). The utilisation
distances are Kolmogorov-Smirnov distances between the per-GPU-minute values of every GPU that
reported and Acme's CDFs (GR_ENGINE_ACTIVE against SM_ACTIVE, frame buffer as % of the card):
Acme's CDFs hold 24-26% of samples with no frame buffer in use, which only GPUs without a job
show, so they cover every GPU, not only held ones. Minutes held by online-inference replicas are
left out: Seren and Kalos run LLM development (pre-training, fine-tuning, evaluation, debugging;
the Acme README's job types [A]), no online serving, while the simulated east keeps 12 GPUs of 64
serving.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import date
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from simulator.fleet import FB_TOTAL_MIB, Fleet, build_fleet
from simulator.jobs import Run
from simulator.plan import Plan, make_plan
from simulator.telemetry import DayValues, TelemetryModel

REFERENCE = Path(__file__).with_name("realism_reference.json")
FAILED_STATES = frozenset({"FAILED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY"})
BINS = 1001  # 0.1-point bins for percentages
# Real ranges the tables do not carry, each with its source.
EXTRA_RANGES: dict[str, tuple[float, float, str]] = {
    "gpu_time_share_8plus": (0.20, 1.0, "issue 20 (Helios/Acme job-size figures; not in ../shared/traces) [U]"),
    "allocation": (0.70, 0.90, "workload-realism.md 4.5: Philly nodes 74%, busy Helios VCs 90% [C]"),
}
KS_LIMIT = 0.15


@cache
def reference() -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(REFERENCE.read_text(encoding="utf-8"))
    return doc


def real_range(key: str) -> tuple[float, float] | None:
    """Lowest and highest published value of `key` over the reference clusters."""
    if key in EXTRA_RANGES:
        lo, hi, _ = EXTRA_RANGES[key]
        return lo, hi
    values = [float(r[key]) for r in reference()["clusters"] if r.get(key) is not None]
    return (min(values), max(values)) if values else None


@dataclass(frozen=True)
class JobRow:
    cluster: str
    job_id: int
    state: str
    gpus: int
    run_s: int
    queue_s: int | None  # None: never started


def job_rows(runs: Mapping[str, Iterable[Run]], plan: Plan) -> list[JobRow]:
    """The last record of every job whose last record ended inside the month. The notebooks of the
    time-sliced node are left out: the published traces have no shards of a GPU."""
    last: dict[tuple[str, int], Run] = {}
    for cluster, rs in runs.items():
        for r in rs:
            if r.spec.shard:
                continue
            key = (cluster, r.job_id)
            seen = last.get(key)
            if seen is None or (r.attempt, r.submit_s) >= (seen.attempt, seen.submit_s):
                last[key] = r
    rows = []
    for (cluster, job_id), r in sorted(last.items()):
        if r.end_s is None or not plan.start_s <= r.end_s < plan.end_s:
            continue
        run_s = (r.end_s - r.start_s) if r.start_s is not None else 0
        queue_s = (r.start_s - r.submit_s) if r.start_s is not None else None
        rows.append(JobRow(cluster, job_id, r.state, r.spec.gpus, run_s, queue_s))
    return rows


def _outcome(state: str) -> str:
    if state == "COMPLETED":
        return "completed"
    if state == "CANCELLED":
        return "cancelled"
    if state in FAILED_STATES:
        return "failed"
    return "other"


def job_statistics(rows: list[JobRow]) -> dict[str, float]:
    """The tables' columns for the simulated month (shares as fractions, times in seconds)."""
    n = len(rows)
    started = [r for r in rows if r.queue_s is not None]
    run = np.array([r.run_s for r in started], dtype=np.float64)
    queue = np.array([r.queue_s for r in started if r.queue_s is not None], dtype=np.float64)
    gpus = np.array([r.gpus for r in rows], dtype=np.float64)
    gpu_time = np.array([r.gpus * r.run_s for r in rows], dtype=np.float64)
    total_time = float(gpu_time.sum()) or 1.0
    outcome = np.array([_outcome(r.state) for r in rows])
    out: dict[str, float] = {
        "jobs": float(n),
        "run_median_s": float(np.median(run)),
        "run_mean_s": float(run.mean()),
        "run_max_s": float(run.max()),
        "run_p99_s": float(np.percentile(run, 99)),
        "queue_median_s": float(np.median(queue)),
        "queue_mean_s": float(queue.mean()),
        "queue_max_s": float(queue.max()),
        "gpus_mean": float(gpus.mean()),
        "gpus_median": float(np.median(gpus)),
        "gpus_max": float(gpus.max()),
        "gpu_time_share_8plus": float(gpu_time[gpus >= 8].sum() / total_time),
        "multi_node_jobs": float(sum(1 for r in rows if r.gpus > 8)),
        "cancelled_pending_jobs": float(sum(1 for r in rows if r.queue_s is None and r.state == "CANCELLED")),
        "timeout_share": float(sum(1 for r in rows if r.state == "TIMEOUT") / max(n, 1)),
        "timeout_gpu_time_share": float(sum(g for r, g in zip(rows, gpu_time, strict=True) if r.state == "TIMEOUT"))
        / total_time,
    }
    for name in ("completed", "cancelled", "failed"):
        mask = outcome == name
        out[f"{name}_share"] = float(mask.sum() / max(n, 1))
        out[f"{name}_gpu_time_share"] = float(gpu_time[mask].sum() / total_time)
    return out


def allocation(runs: Mapping[str, Iterable[Run]], plan: Plan, fleet: Fleet) -> float:
    """Share of the fleet's whole-GPU time held by jobs over the month. MIG and time-sliced nodes are
    left out: the published traces (Philly, Helios, Acme) have none, so their ranges say nothing about
    slices or shards."""
    held = 0
    for name, rs in runs.items():
        cluster = fleet.cluster(name)
        for r in rs:
            h = r.holds(plan.start_s, plan.end_s, plan.end_s)
            if h is not None:
                held += (h[1] - h[0]) * sum(1 for s in r.slots if cluster.is_whole(s))
    whole = sum(c.whole_gpus for c in fleet.clusters)
    return held / (whole * (plan.end_s - plan.start_s))


_METRICS = ("gpu_util", "sm_active", "fb_used")


@dataclass
class UtilHistograms:
    """Per-GPU-minute value counts, in 0.1-point bins, of every GPU that reported (and held ones)."""

    all: dict[str, np.ndarray] = field(default_factory=lambda: {k: np.zeros(BINS, np.int64) for k in _METRICS})
    held: dict[str, np.ndarray] = field(default_factory=lambda: {k: np.zeros(BINS, np.int64) for k in _METRICS})

    def add(self, day: DayValues, serving: frozenset[int] = frozenset(), whole: np.ndarray | None = None) -> None:
        """Count a day's samples, leaving out minutes held by the online-inference jobs `serving`
        and, with `whole` (a mask over the GPU slots), the slots it leaves out (MIG instances, shards)."""
        values = {
            "gpu_util": day.util.astype(np.float64),
            "sm_active": day.gr * 100.0,
            "fb_used": day.fb_used * (100.0 / FB_TOTAL_MIB),
        }
        held = day.job > 0
        valid = day.valid & ~np.isin(day.job, list(serving)) if serving else day.valid
        if whole is not None:
            valid = valid & whole[:, None]
        for name, v in values.items():
            bins = np.clip(np.rint(v * 10), 0, BINS - 1).astype(np.int64)
            self.all[name] += np.bincount(bins[valid], minlength=BINS)
            self.held[name] += np.bincount(bins[valid & held], minlength=BINS)


def ks_distance(counts: np.ndarray, cdf: list[list[float]]) -> float:
    """Kolmogorov-Smirnov distance between binned values (0.1-point bins) and a step CDF (p, value)."""
    p = np.asarray(cdf[0], dtype=np.float64)
    v = np.asarray(cdf[1], dtype=np.float64)
    total = counts.sum()
    if total == 0:
        return math.nan
    grid = np.unique(np.r_[np.arange(BINS) / 10.0, v])
    sim = np.cumsum(counts) / total
    sim_at = sim[np.clip(np.floor(grid * 10 + 1e-9).astype(np.int64), 0, BINS - 1)]
    i = np.searchsorted(v, grid, side="right") - 1
    ref_at = np.where(i >= 0, p[np.clip(i, 0, None)], 0.0)
    return float(np.abs(sim_at - ref_at).max())


def ks_statistics(hist: UtilHistograms) -> dict[str, float]:
    out: dict[str, float] = {}
    for metric, by_cluster in reference()["cdfs"].items():
        for cluster, cdf in by_cluster.items():
            out[f"ks_{metric}_{cluster}"] = ks_distance(hist.all[metric], cdf)
            out[f"ks_{metric}_{cluster}_held_only"] = ks_distance(hist.held[metric], cdf)
        out[f"ks_{metric}_nearest"] = min(out[f"ks_{metric}_{c}"] for c in by_cluster)
        out[f"{metric}_median_all"] = _median(hist.all[metric])
        out[f"{metric}_median_held"] = _median(hist.held[metric])
    return out


def _median(counts: np.ndarray) -> float:
    c = np.cumsum(counts)
    return float(np.searchsorted(c, c[-1] / 2) / 10.0) if c[-1] else math.nan


@dataclass(frozen=True)
class Check:
    name: str
    value: float
    low: float | None
    high: float | None
    source: str

    @property
    def inside(self) -> bool | None:
        if self.low is None or self.high is None:
            return None
        return self.low - 1e-9 <= self.value <= self.high + 1e-9

    def as_dict(self) -> dict[str, Any]:
        return {
            "statistic": self.name,
            "simulated": round(self.value, 4),
            "real_low": self.low,
            "real_high": self.high,
            "inside": self.inside,
            "source": self.source,
        }


TABLE_STATISTICS = (
    "completed_share",
    "cancelled_share",
    "failed_share",
    "completed_gpu_time_share",
    "cancelled_gpu_time_share",
    "failed_gpu_time_share",
    "run_median_s",
    "run_mean_s",
    "run_max_s",
    "queue_median_s",
    "queue_mean_s",
    "gpus_mean",
    "gpus_median",
    "gpus_max",
)
UNRANGED = ("queue_max_s", "run_p99_s", "timeout_share", "timeout_gpu_time_share", "multi_node_jobs", "jobs")


def checks(stats: Mapping[str, float]) -> list[Check]:
    """Every statistic beside its real range (None where the tables publish none)."""
    out = []
    for name in (*TABLE_STATISTICS, *EXTRA_RANGES):
        if name not in stats:
            continue
        low, high = real_range(name) or (None, None)
        source = EXTRA_RANGES[name][2] if name in EXTRA_RANGES else "acme + helios cluster summaries [A]"
        out.append(Check(name, stats[name], low, high, source))
    for metric in _METRICS:
        for suffix in ("seren", "kalos", "nearest"):
            key = f"ks_{metric}_{suffix}"
            if key in stats:
                out.append(Check(key, stats[key], 0.0, KS_LIMIT, "acme/util_cdfs.csv [C]; limit from issue 20"))
    for name in UNRANGED:
        if name in stats:
            out.append(Check(name, stats[name], None, None, "no published range"))
    return out


def month_statistics(start: date, days: int, seed: int, nodes: int) -> dict[str, float]:
    """Schedule the month and generate its telemetry in memory (nothing written); summarise both."""
    from simulator.run import schedule_fleet  # run imports the writers; keep them off this module's import

    fleet = build_fleet(nodes)
    plan = make_plan(fleet, start, days, seed)
    world = schedule_fleet(fleet, plan)
    stats = job_statistics(job_rows(world.runs, plan))
    stats["allocation"] = allocation(world.runs, plan, fleet)
    hist = UtilHistograms()
    for i, c in enumerate(fleet.clusters):
        model = TelemetryModel(c, world.runs[c.name], world.series[c.name], plan, i)
        serving = frozenset(r.job_id for r in world.runs[c.name] if r.spec.service is not None)
        whole = np.array([c.is_whole(s) for s in range(c.gpus)])
        for d in range(plan.days):
            hist.add(model.day(d), serving, whole)
    stats.update(ks_statistics(hist))
    return stats
