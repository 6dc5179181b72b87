"""Row counts of every ingested table, and a small simulated fleet whose files are old enough to import."""

from __future__ import annotations

import os
import subprocess
import time
from datetime import UTC, date, datetime
from pathlib import Path

from simulator import simulate
from warehouse import open_warehouse
from warehouse.store import INGEST_TABLES


def counts(db: Path) -> dict[str, int]:
    """Rows per ingested table; fails if any GPU-minute is stored twice."""
    with open_warehouse(db, read_only=True) as wh:
        out = {t: wh.count(t) for t in INGEST_TABLES}
        distinct = wh.query("SELECT count(*) AS n FROM (SELECT DISTINCT gpu_key, ts FROM gpu_minutes)")["n"][0]
    assert distinct == out["gpu_minutes"], "a GPU-minute was stored twice"
    return out


def small_fleet(out: Path) -> Path:
    """Three days of four nodes; files dated the day after the data ends, so the service's settle time has passed."""
    simulate(out, date(2026, 10, 1), 3, 11, nodes=4)
    past = datetime(2026, 10, 4, tzinfo=UTC).timestamp()
    for path in out.rglob("*"):
        if path.is_file():
            os.utime(path, (past, past))
    return out


def wait_for_marker(proc: subprocess.Popen[bytes], marker: Path, timeout_s: float, log: Path) -> None:
    """Wait until a process run through tests.faults.paused reaches its pause; fail if it exits or hangs first."""
    deadline = time.monotonic() + timeout_s
    while not marker.exists():
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            proc.wait(30)
            tail = log.read_text(errors="replace")[-3000:]
            raise AssertionError(f"never reached its pause (rc {proc.returncode}): {tail}")
        time.sleep(0.05)
