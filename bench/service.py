"""The running service under a concurrent month evaluation: `python -m bench service --json`.

The service runs as `gpusteward serve` does (its three lanes in their own threads, real time) over a
warehouse holding a synthetic month of 1,000 GPUs (bench/_synthetic_month.py), scraping the
simulator's live fleet of 125 dcgm-exporter nodes (1,000 GPUs, served over loopback HTTP by a
process of its own) every 5 s (timeout 4 s: as in Prometheus, a scrape ends before the next is
due), while a client calls the control API about ten times a second. Two phases: idle (no
evaluation), then evaluating (the month's evaluation, `Evaluate` as the service runs it, started
again as soon as it ends, for at least as long as the idle phase, 90 s).

Set GPUSTEWARD_BENCH_SERVICE_KEEP to a folder to keep the month's warehouse there and reuse it on the
next run (its setup, writing 44.6M rows, takes minutes).

Measured per phase:
- scrape-cycle lateness: how much later than its schedule (the previous cycle's start plus the
  interval) each collection cycle started; p50, p99, max;
- control-API latency: a POST action that takes the write lock and records an audited action
  (`/api/v1/quarantine/retry`; the writer publishes the read model after it), and GET /metrics;
  p50, p99, max; and how long each action waited for the write lock.

Goals (issue 22): lateness p99 under 2 s and control-API p99 under 200 ms while evaluating.
`--quick`: a month of 32 GPUs x 2 days, 2 fleet nodes scraped every 0.5 s (timeout 0.4 s), phases of 3 s.
The service's clock starts near the end of the month (2026-10-31 22:00 UTC) and runs in real time,
so the scraped minutes join the evaluated month.
"""

from __future__ import annotations

import multiprocessing
import os
import shutil
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import httpx

from bench._synthetic_month import write_month
from bench.harness import timed

MONTH_START = datetime(2026, 10, 1, tzinfo=UTC)
TOKEN = "bench-token"
QUARANTINED = "/bench/incoming/unreadable.prom"
KEEP = "GPUSTEWARD_BENCH_SERVICE_KEEP"
GOAL_LATENESS_P99_S = 2.0
GOAL_API_P99_MS = 200.0


@dataclass(frozen=True)
class Size:
    gpus: int
    days: int
    nodes: int
    interval_s: float
    phase_s: float


FULL = Size(gpus=1000, days=31, nodes=125, interval_s=5.0, phase_s=90.0)
QUICK = Size(gpus=32, days=2, nodes=2, interval_s=0.5, phase_s=3.0)


class RunningClock:
    """Real time, started at `start`: the scraped minutes fall inside the evaluated month. The monotonic
    clock is the machine's, so the fleet's process follows the same time from the same `began`."""

    def __init__(self, start: datetime, began: float | None = None) -> None:
        self.start = start
        self.began = time.monotonic() if began is None else began

    def now(self) -> datetime:
        return self.start + timedelta(seconds=time.monotonic() - self.began)


@dataclass
class Samples:
    cycles: list[float] = field(default_factory=list)  # monotonic start of every collection cycle
    post: list[tuple[float, float]] = field(default_factory=list)  # (began, seconds)
    metrics: list[tuple[float, float]] = field(default_factory=list)
    lock_waits: list[tuple[float, float]] = field(default_factory=list)  # (began, seconds an action waited)
    problems: list[tuple[float, list[str]]] = field(default_factory=list)  # (cycle's end, its scrape problems)


def _summary(values: list[float], scale: float, unit: str) -> dict[str, float | int]:
    if not values:
        return {"n": 0}
    ordered = sorted(values)

    def pick(q: float) -> float:
        return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] * scale

    return {"n": len(ordered), f"p50_{unit}": round(pick(0.5), 3), f"p99_{unit}": round(pick(0.99), 3),
            f"max_{unit}": round(ordered[-1] * scale, 3)}


def _phase(samples: Samples, interval_s: float, lo: float, hi: float) -> dict[str, Any]:
    late = [b - (a + interval_s) for a, b in zip(samples.cycles, samples.cycles[1:], strict=False) if lo <= b < hi]
    return {
        "seconds": round(hi - lo, 1),
        "scrape_lateness": _summary([max(x, 0.0) for x in late], 1.0, "s"),
        "api_post_action": _summary([s for t, s in samples.post if lo <= t < hi], 1000.0, "ms"),
        "api_get_metrics": _summary([s for t, s in samples.metrics if lo <= t < hi], 1000.0, "ms"),
        "action_write_lock_wait": _summary([s for t, s in samples.lock_waits if lo <= t < hi], 1000.0, "ms"),
        # A late cycle is only half the story: a target that timed out or failed lost its minutes too.
        "scrape_problems": sum(len(p) for t, p in samples.problems if lo <= t < hi),
        "scrape_problem_examples": [x for t, p in samples.problems if lo <= t < hi for x in p][:3],
    }


def _client(url: str, samples: Samples, stop: threading.Event, errors: list[str]) -> None:
    headers = {"Authorization": f"Bearer {TOKEN}"}
    body = {"path": QUARANTINED, "reason": "bench"}
    with httpx.Client(timeout=60) as client:
        while not stop.is_set():
            began = time.monotonic()
            response = client.post(f"{url}/api/v1/quarantine/retry", json=body, headers=headers)
            samples.post.append((began, time.monotonic() - began))
            if response.status_code != 202:
                errors.append(f"POST answered {response.status_code}: {response.text[:200]}")
            began = time.monotonic()
            client.get(f"{url}/metrics")
            samples.metrics.append((began, time.monotonic() - began))
            stop.wait(0.1)


def _config(root: Path, size: Size) -> Path:
    from gpusteward.config import example_config_path
    from simulator.serve import scrape_entry

    text = Path(example_config_path()).read_text(encoding="utf-8")
    path = root / "gpusteward.toml"
    path.write_text(text + """
[service]
listen = "127.0.0.1:0"
evaluate_interval = "1d"
""" + scrape_entry("targets.json", size.interval_s, timeout_s=0.8 * size.interval_s), encoding="utf-8")
    return path


def serve_fleet(nodes: int, start: str, began: float, targets: str, conn: Connection) -> None:
    """In its own process (so its serving competes with the service only for the CPU, not the GIL): the
    simulator's live fleet on loopback, its minutes following `start` plus the monotonic time since `began`."""
    from simulator.serve import LiveFleet, serving

    origin = datetime.fromisoformat(start)
    clock = RunningClock(origin, began)
    fleet = LiveFleet(nodes, seed=7, start=(origin - timedelta(days=1)).date(), days=2,
                      clock=lambda: clock.now().timestamp())
    with serving(fleet, Path(targets)):
        conn.send("serving")
        conn.recv()  # until the bench is done


@contextmanager
def fleet_process(nodes: int, clock: RunningClock, targets: Path) -> Iterator[None]:
    ours, theirs = multiprocessing.Pipe()
    proc = multiprocessing.get_context("spawn").Process(
        target=serve_fleet, args=(nodes, clock.start.isoformat(), clock.began, str(targets), theirs), daemon=True)
    proc.start()
    try:
        if not ours.poll(600) or ours.recv() != "serving":
            raise RuntimeError("the fleet process did not start serving")
        yield
    finally:
        ours.send("stop")
        proc.join(30)
        if proc.is_alive():
            proc.kill()


def _measure(root: Path, size: Size) -> dict[str, Any]:
    from gpusteward.config import load_config
    from service.serve import Service, settings_from_config

    clock = RunningClock(MONTH_START + timedelta(days=size.days - 1, hours=22))
    samples, errors = Samples(), list[str]()
    with fleet_process(size.nodes, clock, root / "targets.json"):
        config = load_config(_config(root, size))
        service = Service(config, settings_from_config(config), clock=clock,
                          env={"GPUSTEWARD_API_TOKENS": f"bench:{TOKEN}"})
        thread = threading.Thread(target=service.run, name="bench-service", daemon=True)
        thread.start()
        try:
            if not service.ready.wait(1800):  # the first cycle evaluates the month once
                raise RuntimeError("the service did not become ready")
            _watch_cycles(service, samples)
            _watch_lock_waits(service, samples)
            analysis = service.lanes[-1]
            evaluations: list[float] = []
            stop_client = threading.Event()
            assert service.url is not None
            client = threading.Thread(target=_client, args=(service.url, samples, stop_client, errors), daemon=True)
            client.start()
            idle_from = time.monotonic()
            time.sleep(size.phase_s)
            busy_from = time.monotonic()
            while time.monotonic() - busy_from < size.phase_s or not evaluations:
                runs = analysis.states["evaluate"].runs
                began = time.monotonic()
                with service.lock:
                    service.shared.dirty = True
                analysis.poke("evaluate")
                while analysis.states["evaluate"].runs == runs:
                    time.sleep(0.05)
                evaluations.append(time.monotonic() - began)
            busy_to = time.monotonic()
            stop_client.set()
            client.join(60)
        finally:
            service.stop.set()
            thread.join(600)
    out = {
        "idle": _phase(samples, size.interval_s, idle_from, busy_from),
        "evaluating": _phase(samples, size.interval_s, busy_from, busy_to),
        "evaluations_s": [round(e, 1) for e in evaluations],
        "api_errors": errors[:5],
    }
    busy = _phase(samples, size.interval_s, busy_from, busy_to)
    lateness, post = busy["scrape_lateness"].get("p99_s", 1e9), busy["api_post_action"].get("p99_ms", 1e9)
    return {**out, "goals": {
        "scrape_lateness_p99_s": f"< {GOAL_LATENESS_P99_S}",
        "api_post_p99_ms": f"< {GOAL_API_P99_MS}",
        "met": lateness < GOAL_LATENESS_P99_S and post < GOAL_API_P99_MS,
    }}


def _watch_cycles(service: Any, samples: Samples) -> None:
    """Record the start of every collection cycle from now on (the collection lane's job, wrapped)."""
    collection = service.lanes[0]
    for job in collection.jobs:
        run = job.run

        def timed_run(now: datetime, run: Any = run) -> Any:
            samples.cycles.append(time.monotonic())
            return run(now)

        job.run = timed_run
        source = job.source
        collect = source.collect

        def counted_collect(now: datetime, collect: Any = collect) -> Any:
            batch = collect(now)
            samples.problems.append((time.monotonic(), [str(p) for p in batch.problems]))
            return batch

        source.collect = counted_collect


def _watch_lock_waits(service: Any, samples: Samples) -> None:
    """Record how long each control action waited for the write lock (its answer's time less the rest)."""
    act, inner = service.act, service._act
    held: dict[int, float] = {}

    def timed_inner(request: Any) -> Any:
        held[threading.get_ident()] = time.monotonic()
        return inner(request)

    def timed_act(request: Any) -> Any:
        began = time.monotonic()
        try:
            return act(request)
        finally:
            samples.lock_waits.append((began, held.pop(threading.get_ident(), began) - began))

    service._act, service.act = timed_inner, timed_act


def _month(root: Path, size: Size) -> float:
    """The month's warehouse in `root` (copied from GPUSTEWARD_BENCH_SERVICE_KEEP when kept there); setup seconds."""
    from warehouse import Quarantined, open_warehouse

    keep = os.environ.get(KEEP)
    kept = Path(keep) / f"month-{size.gpus}x{size.days}.duckdb" if keep else None
    db = root / "gpusteward.duckdb"
    if kept is not None and kept.exists():
        shutil.copyfile(kept, db)
        return 0.0
    with open_warehouse(db) as wh:
        setup = timed(lambda: write_month(wh, MONTH_START, size.days, size.gpus), runs=1)
        # the file the client asks to import again: each request is an audited action under the write lock
        reason = "bench: unreadable on purpose"
        wh.record_failed_import(QUARANTINED, reason, quarantined=Quarantined(
            Path(QUARANTINED).name, "0" * 64, QUARANTINED, 0, reason, "InputError", "bench"))
    if kept is not None:
        kept.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(db, kept)
    return setup.median_s


def run(quick: bool) -> dict[str, Any]:
    size = QUICK if quick else FULL
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="gpusteward-bench-service-") as tmp:
        root = Path(tmp)
        setup = _month(root, size)
        measured = _measure(root, size)
    return {
        "month": f"{size.gpus} GPUs x {size.days} days ({size.gpus * size.days * 1440:,} GPU-minutes, synthetic)",
        "setup_s": round(setup, 1),
        "fleet": f"{size.nodes} nodes ({size.nodes * 8} GPUs) scraped every {size.interval_s:g} s",
        "load_average_1m_before": round(load_before, 2),
        **measured,
        "load_average_1m_after": round(os.getloadavg()[0], 2),
    }
