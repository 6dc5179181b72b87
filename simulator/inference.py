"""Online inference: the vLLM services, where their replicas run, and what their /metrics say.

Load follows the workload notes (section 4, items 8-10): a diurnal curve in the users' local time
with peak/mean about 3, a weekend dip, multiplicative noise per 5-minute window (bursty for
code-like traffic), token lengths from the Azure 2023 trace and a small share of aborted requests.
Latency is a lognormal per window whose median climbs steeply as a replica nears capacity, so the
big chat model breaks 8 s at p99 in the daily peak while the small models never come close.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from simulator.fleet import GPUS_PER_NODE, Cluster
from simulator.jobs import Run
from simulator.plan import DAY_S, HOUR_S, LOCAL_OFFSET_S

WINDOW_S = 300
# fmt: off
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0,
               480.0, 960.0, 1920.0, 7680.0)
TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0,
                40.0, 80.0, 160.0, 640.0, 2560.0)
# fmt: on
PEAK_LOCAL_HOUR = 15.0
PEAK_WIDTH_H = 2.7  # with a 0.2 floor this gives a daily peak/mean of 3.0
WEEKEND_FACTOR = 0.6


@dataclass(frozen=True)
class Service:
    name: str
    replicas: int
    gpus: int
    mean_rps: float  # all replicas together, averaged over a weekday
    capacity_rps: float  # per replica
    e2e_median_s: float  # unloaded
    e2e_sigma: float
    ttft_median_s: float
    ttft_sigma: float
    prompt_mean: float
    gen_mean: float
    length_share: float  # finished_reason="length": hit max_tokens
    abort_share: float  # finished_reason="abort": the error signal
    window_cv: float  # load noise per window
    queue_s: float  # scale of the queueing delay near capacity
    max_seqs: int
    kv_tokens: int
    warmup_s: int  # from job start to the first scrape (loading weights)


SERVICES = (
    Service("chat-70b", 4, 2, 3.2, 3.0, 0.9, 0.75, 0.12, 0.8, 1155, 211, 0.07, 0.012, 0.1, 0.3, 256, 600_000, 420),
    Service("code-7b", 2, 1, 4.0, 16.0, 0.35, 0.8, 0.05, 0.7, 2048, 28, 0.03, 0.008, 0.3, 0.05, 256, 900_000, 120),
    Service("embed-small", 2, 1, 10.0, 40.0, 0.04, 0.5, 0.02, 0.5, 300, 1, 0.0, 0.002, 0.15, 0.01, 512, 400_000, 60),
)
SERVICE_BY_NAME = {s.name: s for s in SERVICES}


@dataclass(frozen=True)
class Replica:
    service: str
    index: int
    host: int  # host index in the cluster
    host_name: str
    port: int
    gpus: int


def place_replicas(cluster: Cluster) -> tuple[Replica, ...]:
    """Fill the infer hosts in order (chat first); replicas that do not fit are left out."""
    infer = cluster.partition_hosts("infer")
    free = dict.fromkeys(infer, GPUS_PER_NODE)
    ports = dict.fromkeys(infer, 8000)
    placed = []
    for svc in SERVICES:
        for i in range(svc.replicas):
            host = next((h for h in infer if free[h] >= svc.gpus), None)
            if host is None:
                continue
            free[host] -= svc.gpus
            placed.append(Replica(svc.name, i, host, cluster.hosts[host], ports[host], svc.gpus))
            ports[host] += 1
    return tuple(placed)


def load_shape(t: np.ndarray) -> np.ndarray:
    """Relative request rate at epoch seconds `t` (weekday mean 1)."""
    local = t + LOCAL_OFFSET_S
    hour = (local % DAY_S) / HOUR_S
    dist = np.minimum(np.abs(hour - PEAK_LOCAL_HOUR), 24 - np.abs(hour - PEAK_LOCAL_HOUR))
    bump = np.exp(-0.5 * (dist / PEAK_WIDTH_H) ** 2)
    scale = (1 - 0.2) / (PEAK_WIDTH_H * math.sqrt(2 * math.pi) / 24)
    weekday = ((local // DAY_S) + 3) % 7  # 1970-01-01 was a Thursday; 0 = Monday
    week = np.where(weekday >= 5, WEEKEND_FACTOR, 1.0)
    return np.asarray((0.2 + scale * bump) * week, dtype=np.float64)


@dataclass
class ReplicaSeries:
    """Cumulative /metrics of one replica run at its scrape times (grid points, epoch seconds)."""

    replica: Replica
    run: Run
    t: np.ndarray  # int64 scrape grid times
    e2e: np.ndarray  # (n, len(E2E_BUCKETS) + 1) cumulative bucket counts, +Inf last
    e2e_sum: np.ndarray
    ttft: np.ndarray
    ttft_sum: np.ndarray
    finished: np.ndarray  # (n, 3): stop, length, abort
    prompt_tokens: np.ndarray
    generation_tokens: np.ndarray
    running: np.ndarray
    waiting: np.ndarray
    kv_usage: np.ndarray
    rho: np.ndarray  # utilisation of the window ending at t (drives the GPU telemetry)


def _queue(rho: np.ndarray, scale: float) -> np.ndarray:
    r = np.minimum(rho, 0.98)
    over = np.maximum(rho - 0.98, 0.0)
    return np.asarray(np.minimum(scale * (r**4 / (1 - r) + 120 * over), 90.0))


def _lognormal_cdf(bounds: tuple[float, ...], median: np.ndarray, sigma: float) -> np.ndarray:
    z = (np.log(np.asarray(bounds))[None, :] - np.log(median)[:, None]) / (sigma * math.sqrt(2))
    return np.asarray(0.5 * (1 + _erf(z)))


def _erf(x: np.ndarray) -> np.ndarray:
    # Abramowitz-Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf and scipy is not a dependency.
    s = np.sign(x)
    a = np.abs(x)
    t = 1 / (1 + 0.3275911 * a)
    poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))))
    return np.asarray(s * (1 - poly * np.exp(-a * a)))


def _counts(rng: np.random.Generator, n: np.ndarray, cdf: np.ndarray) -> np.ndarray:
    probs = np.diff(np.concatenate([np.zeros((len(n), 1)), cdf, np.ones((len(n), 1))], axis=1), axis=1)
    probs = np.clip(probs, 0, None)
    probs /= probs.sum(axis=1, keepdims=True)
    return np.asarray(np.cumsum(rng.multinomial(n, probs), axis=1))


def replica_series(
    replica: Replica, run: Run, up_counts: np.ndarray, *, grid0: int, until_s: int, seed: int
) -> ReplicaSeries | None:
    """Windows of one run from the end of its warm-up to its end (or `until_s`)."""
    svc = SERVICE_BY_NAME[replica.service]
    assert run.start_s is not None
    serve = run.start_s + svc.warmup_s
    end = run.end_s if run.end_s is not None else until_s
    first = -(-serve // WINDOW_S) * WINDOW_S
    t = np.arange(first, end, WINDOW_S, dtype=np.int64)
    if len(t) == 0:
        return None
    rng = np.random.default_rng([seed, run.job_id, run.attempt, 0x1F])
    up = np.maximum(up_counts[(t - grid0) // WINDOW_S], 1)
    noise = rng.gamma(1 / svc.window_cv**2, svc.window_cv**2, len(t))
    lam = svc.mean_rps * load_shape(t) * noise / up
    rho = lam / svc.capacity_rps
    span = np.full(len(t), float(WINDOW_S))
    span[0] = t[0] - serve if t[0] - serve < WINDOW_S else WINDOW_S
    n = rng.poisson(lam * span)
    queue = _queue(rho, svc.queue_s)
    e2e_med = svc.e2e_median_s * (1 + 0.6 * rho**2) + queue
    ttft_med = svc.ttft_median_s * (1 + 1.5 * rho**2) + 0.8 * queue
    e2e = _counts(rng, n, _lognormal_cdf(E2E_BUCKETS, e2e_med, svc.e2e_sigma))
    ttft = _counts(rng, n, _lognormal_cdf(TTFT_BUCKETS, ttft_med, svc.ttft_sigma))
    e2e_sum = n * e2e_med * math.exp(svc.e2e_sigma**2 / 2) * rng.normal(1, 0.02, len(t))
    ttft_sum = n * ttft_med * math.exp(svc.ttft_sigma**2 / 2) * rng.normal(1, 0.02, len(t))
    abort_p = np.clip(svc.abort_share + 0.3 * (rho - 1.0), svc.abort_share, 0.35)
    aborts = rng.binomial(n, abort_p)
    lengths = rng.binomial(n - aborts, svc.length_share)
    finished = np.stack([n - aborts - lengths, lengths, aborts], axis=1)
    prompt = np.maximum(0, n * svc.prompt_mean * rng.normal(1, 0.05, len(t))).round()
    gen = np.maximum(0, (n - aborts) * svc.gen_mean * rng.normal(1, 0.05, len(t))).round()
    mean_e2e = e2e_med * math.exp(svc.e2e_sigma**2 / 2)
    in_flight = rng.poisson(lam * mean_e2e)
    running = np.minimum(in_flight, svc.max_seqs)
    waiting = rng.poisson(lam * queue * np.clip(rho - 0.7, 0, None) * 3)
    kv = np.clip(running * (svc.prompt_mean + svc.gen_mean) / svc.kv_tokens, 0, 1).round(4)
    return ReplicaSeries(
        replica=replica,
        run=run,
        t=t,
        e2e=np.cumsum(e2e, axis=0),
        e2e_sum=np.cumsum(np.maximum(e2e_sum, 0)).round(3),
        ttft=np.cumsum(ttft, axis=0),
        ttft_sum=np.cumsum(np.maximum(ttft_sum, 0)).round(3),
        finished=np.cumsum(finished, axis=0),
        prompt_tokens=np.cumsum(prompt),
        generation_tokens=np.cumsum(gen),
        running=running.astype(np.float64),
        waiting=waiting.astype(np.float64),
        kv_usage=kv,
        rho=rho,
    )


def simulate_services(replicas: tuple[Replica, ...], runs: list[Run], until_s: int, seed: int) -> list[ReplicaSeries]:
    """Every replica run's series; requests are spread over the replicas of a service that are up."""
    inference_runs = [r for r in runs if r.spec.service is not None and r.start_s is not None]
    if not inference_runs:
        return []
    grid0 = min(r.start_s for r in inference_runs if r.start_s is not None) // WINDOW_S * WINDOW_S
    n_windows = (until_s - grid0) // WINDOW_S + 2
    up: dict[str, np.ndarray] = {s.name: np.zeros(n_windows, dtype=np.int64) for s in SERVICES}
    for r in inference_runs:
        assert r.start_s is not None
        assert r.spec.service is not None
        svc = SERVICE_BY_NAME[r.spec.service]
        end = r.end_s if r.end_s is not None else until_s
        a = -(-(r.start_s + svc.warmup_s - grid0) // WINDOW_S)
        b = -(-(end - grid0) // WINDOW_S)
        up[svc.name][max(a, 0) : max(b, 0)] += 1
    out = []
    index = {(rep.service, rep.index): rep for rep in replicas}
    for r in inference_runs:
        assert r.spec.service is not None
        rep = index[(r.spec.service, r.spec.replica)]
        series = replica_series(rep, r, up[r.spec.service], grid0=grid0, until_s=until_s, seed=seed)
        if series is not None:
            out.append(series)
    return out
