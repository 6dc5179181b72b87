"""Row counts of every ingested table, and a small simulated fleet whose files are old enough to import."""

from __future__ import annotations

import os
import time
from datetime import date
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
    """Three days of four nodes; files dated an hour back, so the service's settle time has passed."""
    simulate(out, date(2026, 10, 1), 3, 11, nodes=4)
    past = time.time() - 3600
    for path in out.rglob("*"):
        if path.is_file():
            os.utime(path, (past, past))
    return out
