"""Reclaim detection: from a job's first idle minute to its warning, and the detection's CPU per turn.

A synthetic fleet (8 GPUs a node, four 2-GPU training jobs a node, busy) has its GPU-minutes stored
as they close; at minute 60 every tenth job goes idle. The service's reclaim job (`service.
reclaim_job.Reclaim`, a policy idle for 1 h, the default) runs on the evaluation interval (15 min)
at a phase against the minutes; each turn plans at the ingest watermark, as the service does. The
latency is the turn that recorded the warning minus the first idle minute: the policy's `idle_for`
plus the detection delay, whose goal is two evaluation intervals. Every phase of the turns against
the minutes is run (a minute apart), so the worst case is measured, not assumed.

The CPU is `time.process_time()` of one turn (snapshot, the plan's reads, plan, decide, store), the
busiest one (the turn that warns every idle job) reported apart, as a share of a 30 s scrape cycle
and amortised over the 30 cycles between two turns.
"""

from __future__ import annotations

import shutil
import statistics
import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from gpusteward.config import Config, load_config_text
from gpusteward.tables import GPU_MINUTES, JOBS, conform
from service.reclaim_job import Reclaim
from warehouse import Warehouse, open_warehouse
from warehouse.reclaim_ledger import decisions

T0 = datetime(2026, 10, 5, 6)
GPUS_PER_NODE = 8
GPUS_PER_JOB = 2
IDLE_FROM = 60  # minutes after T0: every tenth job goes idle
IDLE_FOR = 60  # the policy's idle_for, minutes
INTERVAL = 15  # the service's evaluation interval, minutes
SCRAPE_S = 30
INGEST_LAG = 1  # a minute is stored the minute after it closes (the spool's drain)
GOAL_DELAY_MIN = 2 * INTERVAL


def _config(gpus: int) -> Config:
    return load_config_text(f"""
[[clusters]]
name = "synthetic"
gpus = {gpus}

[teams.ml]
entitled_share = 1.0
accounts = ["ml"]

[[rules]]
scenario = "training"
match = {{ partition = "train" }}

[[reclaim.policies]]
name = "stuck-training"
scenario = "training"
when = "idle"
idle_for = "1h"
grace = "1h"
action = "requeue"
""", source="<bench reclaim>")


def _jobs(nodes: int) -> pl.DataFrame:
    per_node = GPUS_PER_NODE // GPUS_PER_JOB
    n = nodes * per_node
    frame = pl.DataFrame({"i": pl.int_range(0, n, eager=True)}).select(
        pl.lit("synthetic").alias("cluster"), (pl.col("i") + 100_000).alias("job_id"),
        pl.lit(T0).alias("submit_time"), pl.lit(T0).alias("start_time"), pl.lit("train").alias("partition"),
        pl.lit("ml").alias("account"), pl.lit("u").alias("user"), pl.lit("RUNNING").alias("state"),
        pl.lit(GPUS_PER_JOB).alias("gpus_allocated"), pl.lit(GPUS_PER_JOB).alias("gpus_requested"),
        pl.lit(24 * 60).alias("time_limit_min"),
        pl.format("synthetic-gpu-{}", (pl.col("i") // per_node).cast(pl.Utf8).str.zfill(4)).alias("nodes"),
    )
    return conform(frame, JOBS)


def _minutes(nodes: int, first: int, last: int) -> pl.DataFrame:
    """Every GPU's minutes [first, last) after T0; the jobs with id % 10 == 0 idle from IDLE_FROM."""
    gpus = nodes * GPUS_PER_NODE
    grid = pl.DataFrame({"g": pl.int_range(0, gpus, eager=True)}).join(
        pl.DataFrame({"m": pl.int_range(first, last, eager=True)}), how="cross")
    job = pl.col("g") // GPUS_PER_JOB
    idle = (job % 10 == 0) & (pl.col("m") >= IDLE_FROM)
    frame = grid.select(
        pl.lit("synthetic").alias("cluster"),
        pl.format("synthetic-gpu-{}", (pl.col("g") // GPUS_PER_NODE).cast(pl.Utf8).str.zfill(4)).alias("host"),
        (pl.col("g") % GPUS_PER_NODE).cast(pl.Int16).alias("gpu"),
        pl.format("GPU-synthetic-{}", pl.col("g")).alias("uuid"),
        (pl.lit(T0) + pl.duration(minutes=pl.col("m"))).alias("ts"),
        (job + 100_000).cast(pl.Utf8).alias("job_id"),
        pl.when(idle).then(0.0).otherwise(60.0 + (pl.col("g") % 7)).alias("gpu_util"),
        pl.lit(4096.0).alias("fb_used_mib"),
    )
    return conform(frame, GPU_MINUTES)


def _phase(wh: Warehouse, config: Config, nodes: int, phase: int, stored: int) -> tuple[int, list[float], float]:
    """Turns at IDLE_FROM + phase + k * INTERVAL from the first after minute `stored` (what `wh` holds): (minutes
    from the first idle minute to the warning, the CPU of turns that warned nobody, the CPU of the turn that warned)."""
    job = Reclaim(config, wh, lambda _cluster: None)
    quiet: list[float] = []
    turn = IDLE_FROM + phase
    while turn - INGEST_LAG <= stored:
        turn += INTERVAL
    while turn < IDLE_FROM + IDLE_FOR + 3 * INTERVAL:
        closed = turn - INGEST_LAG  # minutes stored by the clock's `turn`
        wh.ingest("bench", {"gpu_minutes": _minutes(nodes, stored, closed)})
        stored = closed
        began = time.process_time()
        job.run(T0 + timedelta(minutes=turn))
        cpu = time.process_time() - began
        if decisions(wh).height:
            return turn - IDLE_FROM, quiet, cpu
        quiet.append(cpu)
        turn += INTERVAL
    raise RuntimeError(f"phase {phase}: no warning within {turn - IDLE_FROM} minutes of the first idle minute")


def run(quick: bool) -> dict[str, Any]:
    nodes = 25 if quick else 1000
    phases = [0, 14] if quick else [*range(0, INTERVAL, 2), INTERVAL - 1]
    config = _config(nodes * GPUS_PER_NODE)
    latencies: dict[int, int] = {}
    quiet: list[float] = []
    warning_turns: list[float] = []
    # Every phase starts from one warehouse (copied): the jobs, and minutes up to the last one before the first
    # turn that could warn (the turns before it plan on the same minutes and cannot warn: one of them is timed).
    stored = IDLE_FROM + IDLE_FOR - INTERVAL - 2 * INGEST_LAG
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.duckdb"
        with open_warehouse(base) as wh:
            wh.ingest("bench", {"jobs": _jobs(nodes), "gpu_minutes": _minutes(nodes, IDLE_FROM - 60, stored)})
        for phase in phases:
            copy = Path(tmp) / f"p{phase}.duckdb"
            shutil.copyfile(base, copy)
            with open_warehouse(copy) as wh:
                latencies[phase], cpu, warned = _phase(wh, config, nodes, phase, stored)
                quiet += cpu
                warning_turns.append(warned)
                warned_jobs = decisions(wh).height
            copy.unlink()
    idle_for = IDLE_FOR
    worst = max(latencies.values())
    turn_cpu = statistics.median(quiet)
    return {
        "nodes": nodes,
        "gpus": nodes * GPUS_PER_NODE,
        "running_jobs": nodes * GPUS_PER_NODE // GPUS_PER_JOB,
        "idle_jobs_warned": warned_jobs,
        "evaluation_interval_min": INTERVAL,
        "first_idle_to_warning_min": {"best": min(latencies.values()), "worst": worst,
                                      "by_phase": latencies},
        "detection_delay_after_idle_for_min": {"worst": worst - idle_for, "goal": GOAL_DELAY_MIN,
                                               "met": worst - idle_for <= GOAL_DELAY_MIN},
        "turn_cpu_s": {"median": turn_cpu, "max": max(quiet), "turns": len(quiet),
                       "warning_turn_median": statistics.median(warning_turns)},
        "share_of_a_30s_scrape_cycle": turn_cpu / SCRAPE_S,
        "share_amortised_over_the_interval": turn_cpu / (INTERVAL * 60),
    }
