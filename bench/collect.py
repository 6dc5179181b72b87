"""CPU seconds of one live collection cycle over 1,000 simulated dcgm-exporter nodes.

A separate process serves the nodes on 127.0.0.1 (one path per node, dcgm-exporter's shape: 8 GPUs
x 20 fields, 10 labels each, the values changing between scrapes); this process runs the
`Scraper` (fetch, parse, roll up to GPU-minutes) and measures its own CPU time per cycle with
`time.process_time()`, so the servers' CPU is not counted. The first cycle (cold parser cache) is
reported apart from the repeated ones (median, min, max).
"""

from __future__ import annotations

import multiprocessing
import statistics
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler
from multiprocessing.connection import Connection
from typing import Any

from collectors.scrape import Scraper, ScrapeSettings
from collectors.targets import target
from tests.collectors.dcgm_scrape import scrape
from tests.collectors.local_http import BacklogServer

GOAL_CPU_S = 1.0


def _bodies(nodes: int, seed: int) -> list[bytes]:
    template = scrape(1, seed=seed)
    return [
        template.replace("gpu-node-0000", f"gpu-node-{n:04d}").replace("GPU-00000000-", f"GPU-{n:08x}-").encode()
        for n in range(nodes)
    ]


def serve_nodes(nodes: int, conn: Connection) -> None:
    variants = [_bodies(nodes, seed) for seed in (1, 2)]
    served = [0] * nodes

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            n = int(self.path.strip("/").split("/")[0])
            body = variants[served[n] % 2][n]
            served[n] += 1
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: ARG002
            return

    server = BacklogServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    conn.send(server.server_address[1])
    conn.recv()  # until the benchmark is done
    server.shutdown()


@dataclass(frozen=True)
class Cycles:
    """CPU and wall seconds of each scrape cycle (the first one with a cold parser cache)."""

    nodes: int
    cpu: list[float]
    wall: list[float]
    rows: int  # GPU-minute rows of the last cycle


def measure_cycles(nodes: int, cycles: int) -> Cycles:
    """Serve `nodes` exporters from a separate process and time `cycles` collections of them here."""
    ours, theirs = multiprocessing.Pipe()
    proc = multiprocessing.get_context("spawn").Process(target=serve_nodes, args=(nodes, theirs), daemon=True)
    proc.start()
    try:
        port = ours.recv()
        targets = [target(f"127.0.0.1:{port}", {"__metrics_path__": f"/{n}/metrics"}) for n in range(nodes)]
        scraper = Scraper(targets, settings=ScrapeSettings(timeout_s=30, concurrency=32))
        cpu: list[float] = []
        wall: list[float] = []
        rows = 0
        for _ in range(cycles):
            c0, w0 = time.process_time(), time.perf_counter()
            batch = scraper.collect(flush=True)
            cpu.append(time.process_time() - c0)
            wall.append(time.perf_counter() - w0)
            if batch.problems:
                raise AssertionError(f"scrape problems: {batch.problems[:3]}")
            rows = batch.frames["gpu_minutes"].height
    finally:
        ours.send("stop")
        proc.join(10)
    return Cycles(nodes, cpu, wall, rows)


def run(quick: bool) -> dict[str, Any]:
    nodes = 100 if quick else 1000
    measured = measure_cycles(nodes, 2 if quick else 4)
    cpu, wall = measured.cpu, measured.wall
    warm = cpu[1:]
    return {
        "nodes": nodes,
        "gpus": nodes * 8,
        "samples_per_cycle": nodes * 8 * 20,
        "gpu_minute_rows_per_cycle": measured.rows,
        "cpu_s_cold_cycle": round(cpu[0], 3),
        "cpu_s_per_cycle": {
            "median": round(statistics.median(warm), 3),
            "min": round(min(warm), 3),
            "max": round(max(warm), 3),
            "cycles": len(warm),
        },
        "wall_s_per_cycle_median": round(statistics.median(wall[1:]), 3),
        "goal_cpu_s": GOAL_CPU_S,
    }
