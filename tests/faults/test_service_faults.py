"""The service under ingest faults: `kill -9` of `gpusteward serve` mid-import then a restart, and a
full disk under its folder import.

Either way no committed row is lost or stored twice: once the fault is gone, every table holds
exactly what a clean import of the same files holds.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import httpx
import pytest

from gpusteward.config import example_config_path
from service.importer import import_files
from service.metrics import ServiceMetrics
from service.tasks import FolderImport, Shared
from tests.faults.counting import counts, small_fleet, wait_for_marker
from tests.simulated import SIMULATED
from warehouse import open_warehouse

ROOT = Path(__file__).resolve().parents[2]
SERVE = "from service.cli import main; main()"
DEADLINE_S = 300  # a bound on waiting for the service, so a hang fails instead of blocking CI


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_fleet(tmp_path_factory.mktemp("fleet"))


@pytest.fixture(scope="module")
def clean_counts(fleet: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    db = tmp_path_factory.mktemp("clean") / "w.duckdb"
    with open_warehouse(db) as wh:
        assert not import_files(wh, [fleet], ignore=SIMULATED).errors
    return counts(db)


def _config(tmp_path: Path, db: Path) -> Path:
    text = Path(example_config_path()).read_text(encoding="utf-8")
    text, n = re.subn(r'(?m)^path = "gpusteward\.duckdb"$', f'path = "{db}"', text)
    assert n == 1, "the example config's warehouse path moved"
    path = tmp_path / "gpusteward.toml"
    path.write_text(text, encoding="utf-8")
    return path


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _serve(
    config: Path, fleet: Path, port: int, log: Path, *, paused_at: tuple[Path, int] | None = None
) -> subprocess.Popen[bytes]:
    head = ["-m", "tests.faults.paused", str(paused_at[0]), str(paused_at[1])] if paused_at else ["-c", SERVE]
    with log.open("ab") as out:
        return subprocess.Popen(
            [
                sys.executable,
                *head,
                "serve",
                "--config",
                str(config),
                "--import-dir",
                str(fleet),
                "--listen",
                f"127.0.0.1:{port}",
                "--interval",
                "1h",
                "--evaluate-every",
                "1h",
            ],
            stdout=out,
            stderr=subprocess.STDOUT,
            cwd=ROOT,
        )


def _imported_once(port: int) -> bool:
    """True once the folder import job has finished a run without error (from the service's /metrics)."""
    try:
        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=5).text
    except httpx.TransportError:
        return False
    return re.search(r'gpusteward_job_runs_total\{job="import:[^"]*",outcome="ok"\} [1-9]', text) is not None


def test_kill_9_of_the_service_mid_import_then_restart_loses_and_doubles_nothing(
    fleet: Path, clean_counts: dict[str, int], tmp_path: Path
) -> None:
    db, marker = tmp_path / "w.duckdb", tmp_path / "paused"
    config, port, log = _config(tmp_path, db), _free_port(), tmp_path / "serve.log"
    # The folder import has committed two files' batches; the third is written, not committed.
    proc = _serve(config, fleet, port, log, paused_at=(marker, 3))
    wait_for_marker(proc, marker, DEADLINE_S, log)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL, log.read_text(errors="replace")[-3000:]
    partial = counts(db)  # what was committed before the kill, each GPU-minute once
    assert 0 < partial["gpu_minutes"] < clean_counts["gpu_minutes"], partial

    again = _serve(config, fleet, port, log)
    try:
        deadline = time.monotonic() + DEADLINE_S
        while again.poll() is None and not _imported_once(port) and time.monotonic() < deadline:
            time.sleep(0.2)
        assert again.poll() is None, log.read_text(errors="replace")[-3000:]
        assert _imported_once(port), "the restarted service did not finish its import"
    finally:
        again.send_signal(signal.SIGTERM)  # finishes the job writing now, then closes the warehouse
        try:
            again.wait(120)
        except subprocess.TimeoutExpired:
            again.kill()
            again.wait(10)
    assert again.returncode == 0, log.read_text(errors="replace")[-3000:]
    assert counts(db) == clean_counts


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)], capture_output=True, check=False
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {made.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def test_the_folder_import_survives_a_full_disk_and_catches_up_when_space_returns(
    fleet: Path, clean_counts: dict[str, int], small_disk: Path
) -> None:
    db = small_disk / "w.duckdb"
    now = datetime(2026, 11, 1)
    with open_warehouse(db) as wh:
        job = FolderImport(
            "import:fleet", timedelta(minutes=5), [fleet], wh, Shared(), ServiceMetrics(), ignore=SIMULATED
        )
        with pytest.raises(duckdb.Error, match=r"No space left on device") as full:
            job.run(now)  # the scheduler logs this and runs the job again on its next interval
        assert str(db) in str(full.value)  # names where
        # The same connection still reads: what was committed before the disk filled is there.
        partial = {t: wh.count(t) for t in clean_counts}
        assert 0 < partial["gpu_minutes"] < clean_counts["gpu_minutes"], partial
        with pytest.raises(duckdb.Error, match=r"No space left on device"):
            job.run(now + timedelta(minutes=5))  # still full: fails again, stores nothing twice
        subprocess.run(["mount", "-o", "remount,size=256m", str(small_disk)], check=True)
        result = job.run(now + timedelta(minutes=10))  # space is back: the files that failed are imported
        assert result.wrote
    assert counts(db) == clean_counts
