"""A real Prometheus on loopback, backfilled from OpenMetrics dumps with promtool (bench helper).

Not a benchmark itself (bench.harness skips `_name` modules). The same bring-up as
tests/realcomponents/conftest.py, without pytest: `available()` says whether the Debian
`prometheus` package is installed, `loaded(dumps, base)` backfills every dump and yields the URL.

Persisted-block compaction is switched off (`--storage.tsdb.max-block-duration=2h`, a hidden flag):
promtool writes one block per day file, and Prometheus would otherwise start merging them in the
background while the benchmark times its queries.
"""

from __future__ import annotations

import gzip
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx

READY_TRIES = 600  # x 0.1 s


def available() -> bool:
    """Whether both `prometheus` and `promtool` are on PATH (the Debian package `prometheus`)."""
    return shutil.which("prometheus") is not None and shutil.which("promtool") is not None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def backfill(dumps: list[Path], data: Path, scratch: Path) -> None:
    """`promtool tsdb create-blocks-from openmetrics` once per dump (gzip'd OpenMetrics) into `data`."""
    promtool = shutil.which("promtool")
    if promtool is None:
        raise RuntimeError("promtool is not installed: apt-get install prometheus")
    for path in dumps:
        om = scratch / path.name.removesuffix(".gz")
        om.write_bytes(gzip.decompress(path.read_bytes()))
        # --max-block-duration is hidden and goes before `openmetrics` (see the shared notes).
        subprocess.run(
            [promtool, "tsdb", "create-blocks-from", "--max-block-duration=240h", "openmetrics", "-q",
             str(om), str(data)],
            check=True,
            capture_output=True,
            timeout=600,
        )
        om.unlink()


def _wait_ready(url: str, proc: subprocess.Popen[bytes], log: Path) -> None:
    for _ in range(READY_TRIES):
        if proc.poll() is not None:
            break
        try:
            if httpx.get(url, timeout=1).status_code == httpx.codes.OK:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError(f"{url} never became ready:\n{log.read_text(errors='replace')[-2000:]}")


def peak_rss_mib(pid: int) -> float | None:
    """The process's resident high-water mark so far (VmHWM), in MiB; None when unreadable."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


@contextmanager
def serving(data: Path, base: Path) -> Iterator[tuple[str, int]]:
    """Prometheus over an existing TSDB folder on a free loopback port: (URL, pid); stopped when
    the block exits."""
    binary = shutil.which("prometheus")
    if binary is None:
        raise RuntimeError("prometheus is not installed: apt-get install prometheus")
    config = base / "prometheus.yml"
    config.write_text("global:\n  scrape_interval: 60s\nscrape_configs: []\n", encoding="utf-8")
    port = _free_port()
    log = base / "prometheus.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                binary,
                f"--config.file={config}",
                f"--storage.tsdb.path={data}",
                "--storage.tsdb.retention.time=3650d",  # the default 15d would drop the backfill
                "--storage.tsdb.max-block-duration=2h",  # no background compaction while timing
                "--query.max-samples=500000000",
                "--query.timeout=10m",
                f"--web.listen-address=127.0.0.1:{port}",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_ready(f"{url}/-/ready", proc, log)
        yield url, proc.pid
    finally:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
