"""Measurements of what was planted, taken from the simulation itself, for the manifest's details.

They use the same definitions as the evaluators (docs/config.md): waits are start - eligible of
records that started in the range; shares are of all teams' GPU-hours; latency quantiles are
`histogram_quantile` over summed bucket increases; idle runs need 30 consecutive minutes below 5%
graphics-engine activity on one GPU and job, and a missing minute breaks a run.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from simulator.fleet import SHARED_REPLICAS
from simulator.inference import E2E_BUCKETS, ReplicaSeries
from simulator.jobs import Run
from simulator.plan import HOUR_S, LOCAL_OFFSET_S, Plan
from simulator.telemetry import DayValues

IDLE_RUN_MIN = 30
IDLE_BELOW = 0.05
HELD_MIB = 1024


def p95(values: list[float]) -> float:
    return float(np.percentile(np.asarray(values, dtype=np.float64), 95)) if values else float("nan")


def queue_waits(runs: dict[str, list[Run]], plan: Plan) -> dict[str, list[float]]:
    """Waits in seconds per queue "<cluster>/<partition>" of the records that started in the range."""
    out: dict[str, list[float]] = defaultdict(list)
    for cluster, rs in runs.items():
        for r in rs:
            if r.start_s is not None and plan.start_s <= r.start_s < plan.end_s:
                out[f"{cluster}/{r.spec.partition}"].append(float(r.start_s - r.submit_s))
    return dict(out)


def team_gpu_hours(runs: dict[str, list[Run]], plan: Plan) -> dict[str, float]:
    """GPU-hours per team; a shard of a time-sliced GPU is 1/replicas of one, as the config's
    `[[capacity.shared]]` rule counts it."""
    out: dict[str, float] = defaultdict(float)
    for rs in runs.values():
        for r in rs:
            held = r.holds(plan.start_s, plan.end_s, plan.end_s)
            if held is not None:
                gpus = r.spec.gpus / SHARED_REPLICAS if r.spec.shard else r.spec.gpus
                out[r.spec.account] += (held[1] - held[0]) * gpus / 3600
    return dict(out)


def histogram_quantile(q: float, bounds: tuple[float, ...], counts: np.ndarray) -> float:
    """Prometheus bucketQuantile on one cumulative histogram (bounds without +Inf; counts with it)."""
    total = float(counts[-1])
    if total <= 0:
        return float("nan")
    rank = q * total
    b = int(np.searchsorted(counts[:-1], rank, side="left"))
    if b >= len(bounds):
        return bounds[-1]
    lower = bounds[b - 1] if b > 0 else 0.0
    below = float(counts[b - 1]) if b > 0 else 0.0
    return float(lower + (bounds[b] - lower) * (rank - below) / (float(counts[b]) - below))


def latency_p99(series: list[ReplicaSeries], plan: Plan, service: str, hours: set[int] | None = None) -> float:
    """Month p99 of a service's e2e latency; only windows starting in local `hours` when given."""
    total = np.zeros(len(E2E_BUCKETS) + 1)
    for s in series:
        if s.replica.service != service:
            continue
        inc = np.diff(s.e2e, axis=0, prepend=np.zeros((1, s.e2e.shape[1])))
        keep = (s.t > plan.start_s) & (s.t <= plan.end_s)
        if hours is not None:
            local_hour = ((s.t - 300 + LOCAL_OFFSET_S) % 86_400) // HOUR_S
            keep &= np.isin(local_hour, list(hours))
        total += inc[keep].sum(axis=0)
    return histogram_quantile(0.99, E2E_BUCKETS, total)


def idle_minutes(day: DayValues, team_of_job: dict[int, str], acc: dict[str, float]) -> None:
    """Add each team's idle-held GPU-minutes of interactive jobs in `day` to `acc`. On a time-sliced
    card each sharing job's row carries the card's values, idle only when every sharer is: a
    sharer's idle minute counts 1/replicas of a GPU-minute (the card's minute split among them)."""
    below = (day.gr < IDLE_BELOW) & day.valid & (day.fb_used > HELD_MIB)
    job = np.where(day.valid, day.job, -1)
    n, m = job.shape
    change = np.ones((n, m), dtype=bool)
    change[:, 1:] = (job[:, 1:] != job[:, :-1]) | (below[:, 1:] != below[:, :-1])
    flat_change = change.ravel()
    starts = np.flatnonzero(flat_change)
    lengths = np.diff(np.r_[starts, n * m])
    jobs = job.ravel()[starts]
    idle = below.ravel()[starts] & (lengths >= IDLE_RUN_MIN) & (jobs > 0)
    share = np.ones(n) if day.replicas is None else 1.0 / day.replicas
    weights = share[starts[idle] // m]
    for j, length, w in zip(jobs[idle].tolist(), lengths[idle].tolist(), weights.tolist(), strict=True):
        team = team_of_job.get(j)
        if team is not None:
            acc[team] = acc.get(team, 0.0) + length * w


def inference_held(runs: list[Run], t0: int, t1: int) -> tuple[int, int]:
    """(fewest, most) GPUs held by online inference at any minute in [t0, t1)."""
    minutes = np.arange(t0, t1, 60)
    held = np.zeros(len(minutes), dtype=np.int64)
    for r in runs:
        if r.spec.service is None or r.start_s is None:
            continue
        end = r.end_s if r.end_s is not None else t1
        held += ((minutes >= r.start_s) & (minutes < end)) * r.spec.gpus
    return (int(held.min()), int(held.max())) if len(held) else (0, 0)
