"""Real Prometheus and VictoriaMetrics on loopback, loaded with the same small simulated fleet.

Two days of two nodes (16 GPUs): Prometheus gets the DCGM dumps through `promtool tsdb
create-blocks-from openmetrics`, VictoriaMetrics through `/api/v1/import/prometheus` (the same
samples, timestamps in milliseconds). Both are stopped, and their data removed, after the session.
"""

from __future__ import annotations

import gzip
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import date
from pathlib import Path

import httpx
import pytest

from bench._prometheus import backfill, serving
from simulator import simulate
from tests.real import require_binary

START = date(2026, 10, 1)
DAYS = 2
READY_TRIES = 300  # x 0.1 s


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    for _ in range(READY_TRIES):
        if proc.poll() is not None:
            break
        try:
            if httpx.get(url, timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} never became ready:\n{log.read_text(errors='replace')[-2000:]}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.fixture(scope="session")
def sim_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fleet")
    simulate(out, START, DAYS, 21, nodes=2)
    return out


def dcgm_files(sim_dir: Path) -> list[Path]:
    return sorted(sim_dir.glob("dcgm/*/*.om.gz"))


@contextmanager
def prometheus_loaded_with(dumps: list[Path], base: Path) -> Iterator[str]:
    """A real Prometheus on a loopback port, backfilled from OpenMetrics dumps with promtool;
    stopped when the block exits (the same bring-up as `python -m bench promql`)."""
    require_binary("prometheus", package="prometheus")
    require_binary("promtool", package="prometheus")
    data = base / "data"
    backfill(dumps, data, base)
    with serving(data, base) as (url, _pid):
        yield url


@pytest.fixture(scope="session")
def prometheus_url(sim_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    with prometheus_loaded_with(dcgm_files(sim_dir), tmp_path_factory.mktemp("prometheus")) as url:
        yield url


def vllm_files(sim_dir: Path) -> list[Path]:
    return sorted(sim_dir.glob("vllm/*/*.om.gz"))


@pytest.fixture(scope="session")
def prometheus_with_vllm(sim_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A real Prometheus holding the simulator's vLLM samples."""
    with prometheus_loaded_with(vllm_files(sim_dir), tmp_path_factory.mktemp("prom-vllm")) as url:
        yield url


def to_text_ms(om_text: str) -> str:
    """OpenMetrics sample lines with second timestamps -> text-format lines with milliseconds."""
    out = []
    for line in om_text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, ts = line.rsplit(" ", 1)
        sec, _, frac = ts.partition(".")
        out.append(f"{head} {int(sec) * 1000 + int((frac + '000')[:3])}")
    return "\n".join(out) + "\n"


@pytest.fixture(scope="session")
def victoria_url(sim_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = require_binary("victoria-metrics", package="victoria-metrics")
    base = tmp_path_factory.mktemp("victoria")
    port = free_port()
    log = base / "vm.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                binary,
                f"-storageDataPath={base / 'data'}",
                "-retentionPeriod=100y",
                f"-httpListenAddr=127.0.0.1:{port}",
                "-search.disableCache",
                "-search.latencyOffset=0s",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(f"{url}/health", proc, log)
        for path in dcgm_files(sim_dir):
            body = to_text_ms(gzip.decompress(path.read_bytes()).decode())
            r = httpx.post(f"{url}/api/v1/import/prometheus", content=body.encode(), timeout=120)
            assert r.status_code == 204, r.text
        httpx.get(f"{url}/internal/force_flush", timeout=60).raise_for_status()
        yield url
    finally:
        stop(proc)  # VictoriaMetrics flushes on SIGTERM; the data folder goes with the tmp dir
