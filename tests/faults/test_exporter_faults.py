"""Exporter faults the collector tests do not cover yet: truncated bodies, GPUs vanishing from a
node's output, XID errors appearing. Real HTTP on 127.0.0.1; each node's answer is set per cycle.

(Down, hanging, refusing, 500 and garbage answers are in tests/collectors/test_scrape.py.)
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import polars as pl
import pytest

from collectors.scrape import Scraper, ScrapeSettings
from collectors.targets import Target, target
from tests.collectors.dcgm_scrape import scrape

NODES = 3
T0_MS = 1_790_000_040_000 // 60_000 * 60_000  # a minute boundary


@dataclass
class Fleet:
    """What each node answers next: ("ok" | "truncated" | "cut", body)."""

    answers: dict[int, tuple[str, bytes]] = field(default_factory=dict)
    port: int = 0

    def targets(self) -> list[Target]:
        return [target(f"127.0.0.1:{self.port}", {"__metrics_path__": f"/{n}/metrics"}) for n in range(NODES)]


def node_text(n: int, seed: int) -> str:
    return scrape(1, seed=seed).replace("gpu-node-0000", f"gpu-node-{n:04d}").replace("GPU-00000000-", f"GPU-{n:08x}-")


def with_xid(text: str, gpu: int | None, value: int) -> str:
    """Every XID gauge 0, except `gpu`'s (when given) set to `value`."""

    def fix(m: re.Match[str]) -> str:
        return f"{m.group(1)}{value if gpu is not None and m.group(2) == str(gpu) else 0}"

    return re.sub(r'^(DCGM_FI_DEV_XID_ERRORS\{gpu="(\d+)".*\} )\S+$', fix, text, flags=re.MULTILINE)


@pytest.fixture
def fleet() -> Iterator[Fleet]:
    state = Fleet()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            mode, body = state.answers[int(self.path.strip("/").split("/")[0])]
            self.send_response(200)
            self.send_header("Content-Type", "text/plain; version=0.0.4")
            declared = len(body) + (4096 if mode == "truncated" else 0)
            self.send_header("Content-Length", str(declared))
            self.end_headers()
            with suppress(BrokenPipeError, ConnectionResetError):
                self.wfile.write(body)
            if mode == "truncated":
                self.close_connection = True

        def log_message(self, format: str, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    state.port = server.server_address[1]
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


class Wall:
    def __init__(self) -> None:
        self.ms = T0_MS + 20_000

    def __call__(self) -> int:
        return self.ms


def _scraper(fleet: Fleet, wall: Wall) -> Scraper:
    return Scraper(fleet.targets(), settings=ScrapeSettings(timeout_s=5, backoff_s=0, backoff_max_s=0), wall_ms=wall)


def _gpus_of(frame: pl.DataFrame, node: int) -> list[str]:
    return sorted(frame.filter(pl.col("uuid").str.starts_with(f"GPU-{node:08x}-"))["uuid"].to_list())


def _all_ok(fleet: Fleet, seed: int) -> None:
    fleet.answers = {n: ("ok", with_xid(node_text(n, seed), None, 0).encode()) for n in range(NODES)}


@pytest.mark.parametrize("mode", ["truncated", "cut"])
def test_a_truncated_body_fails_that_node_only_and_leaves_no_zeros(fleet: Fleet, mode: str) -> None:
    wall = Wall()
    scraper = _scraper(fleet, wall)
    _all_ok(fleet, 1)
    body = fleet.answers[1][1]
    cut = body.index(b"DCGM_FI_DEV_POWER_USAGE{") + 30  # in the middle of a series' labels
    fleet.answers[1] = (mode, body[:cut])
    batch = scraper.collect(flush=True)
    frame = batch.frames["gpu_minutes"]
    assert len(_gpus_of(frame, 0)) == 8
    assert len(_gpus_of(frame, 2)) == 8
    assert _gpus_of(frame, 1) == []  # missing, never zero
    assert any("/1/metrics" in p.source or "/1/metrics" in str(p) for p in batch.problems), batch.problems
    # The node recovers on the next cycle.
    _all_ok(fleet, 2)
    wall.ms += 60_000
    again = scraper.collect(flush=True)
    assert len(_gpus_of(again.frames["gpu_minutes"], 1)) == 8
    assert not again.problems


def test_gpus_vanishing_from_a_node_are_missing_rows_not_zeros(fleet: Fleet) -> None:
    wall = Wall()
    scraper = _scraper(fleet, wall)
    _all_ok(fleet, 1)
    first = scraper.collect(flush=True).frames["gpu_minutes"]
    assert len(_gpus_of(first, 0)) == 8
    lines = with_xid(node_text(0, 2), None, 0).splitlines(keepends=True)
    fleet.answers[0] = ("ok", "".join(x for x in lines if 'gpu="3"' not in x and 'gpu="5"' not in x).encode())
    wall.ms += 60_000
    second = scraper.collect(flush=True)
    frame = second.frames["gpu_minutes"]
    gone = {g for g in _gpus_of(first, 0) if "-0003-" in g or "-0005-" in g}
    assert len(gone) == 2
    assert set(_gpus_of(frame, 0)) == set(_gpus_of(first, 0)) - gone
    assert frame.height == 8 * NODES - 2
    # Everything that is there is real: no zero-filled rows for the vanished GPUs.
    assert frame.filter(pl.col("uuid").is_in(list(gone))).height == 0
    # They come back when the exporter lists them again.
    _all_ok(fleet, 3)
    wall.ms += 60_000
    assert len(_gpus_of(scraper.collect(flush=True).frames["gpu_minutes"], 0)) == 8


def test_xid_errors_appearing_are_kept_on_their_gpu_minute(fleet: Fleet) -> None:
    wall = Wall()
    scraper = _scraper(fleet, wall)
    _all_ok(fleet, 1)
    quiet = scraper.collect(flush=True).frames["gpu_minutes"]
    assert quiet["xid"].drop_nulls().to_list() == []
    fleet.answers[2] = ("ok", with_xid(node_text(2, 2), 4, 79).encode())
    wall.ms += 60_000
    frame = scraper.collect(flush=True).frames["gpu_minutes"]
    hit = frame.filter(pl.col("xid").is_not_null())
    assert hit["xid"].to_list() == [79]
    assert hit["uuid"][0].startswith(f"GPU-{2:08x}-0004-")
    assert frame.height == 8 * NODES  # the GPU with the error still reports its minute
