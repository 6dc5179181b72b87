"""Loading one scrape cycle into the warehouse: the bulk path against `executemany`.

A cycle of a 1,000-node fleet (8,000 GPUs) is 8,000 GPU-minute rows. Three contenders, in
alternating rounds (bench.harness.interleaved), each cycle a new minute so every row is new:
- `warehouse_ingest`: `Warehouse.ingest` with a polars frame, the service's real path (one
  transaction, GPU registry upsert, anti-join against the stored minutes, import-run record);
- `bulk_insert`: `INSERT INTO ... SELECT * FROM frame` of the same rows, no dedup;
- `executemany`: `executemany` INSERT of the same rows (timed on a slice in `--quick`, scaled).
The warehouse already holds a day of minutes for the fleet, so the anti-join has work to do.
Share of cycle = the ingest's median over the 30 s scrape interval.
"""

from __future__ import annotations

import itertools
import tempfile
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from bench._frames import day_frame, minute_frame
from bench.harness import interleaved
from warehouse import open_warehouse
from warehouse.sql import run as sql

CYCLE_S = 30.0
START = datetime(2026, 10, 1)
GOAL_SHARE = 0.1  # the load may use at most a tenth of the cycle


def run(quick: bool) -> dict[str, Any]:
    nodes = 100 if quick else 1000
    gpus = nodes * 8
    runs = 3 if quick else 5
    em_rows = 500 if quick else 2000
    minutes = itertools.count(1440 + 1)
    with tempfile.TemporaryDirectory(prefix="gpusteward-load-") as tmp, open_warehouse(Path(tmp) / "l.duckdb") as wh:
        con = wh.connection
        wh.ingest("history", {"gpu_minutes": day_frame(0, gpus, start=START)})
        sql(con, "CREATE TABLE bulk_copy AS SELECT * FROM gpu_minutes LIMIT 0")
        sql(con, "CREATE TABLE em_copy AS SELECT * FROM gpu_minutes LIMIT 0")
        columns = list(con.sql("SELECT * FROM gpu_minutes LIMIT 0").columns)
        marks = ", ".join("?" for _ in columns)
        keys = pl.Series("gpu_key", range(1, gpus + 1), dtype=pl.Int32)  # as the registry assigns them
        # Frames are built before timing: each contender gets its own new minutes every round.
        fresh = iter([minute_frame(next(minutes), gpus, start=START) for _ in range(3 * runs)])

        def stored_rows() -> pl.DataFrame:
            return next(fresh).with_columns(keys).select(columns)

        def ingest() -> None:
            wh.ingest("bench", {"gpu_minutes": next(fresh)})

        def bulk() -> None:
            con.register("_cycle", stored_rows())
            try:
                sql(con, "INSERT INTO bulk_copy SELECT * FROM _cycle")
            finally:
                con.unregister("_cycle")

        def executemany() -> None:
            con.executemany(f"INSERT INTO em_copy VALUES ({marks})", stored_rows().head(em_rows).rows())

        fns: dict[str, Callable[[], object]] = {
            "warehouse_ingest": ingest, "bulk_insert": bulk, "executemany": executemany
        }
        timings = interleaved(fns, runs=runs)
        stored = wh.count("gpu_minutes")
    scale = gpus / em_rows
    em_full = timings["executemany"].median_s * scale
    ing = timings["warehouse_ingest"].median_s
    bulk_s = timings["bulk_insert"].median_s
    return {
        "benchmark": "load",
        "nodes": nodes,
        "rows_per_cycle": gpus,
        "rows_stored": stored,
        "timings": {k: t.as_dict() for k, t in timings.items()},
        "executemany_rows_timed": em_rows,
        "rows_per_s": {
            "warehouse_ingest": round(gpus / ing),
            "bulk_insert": round(gpus / bulk_s),
            "executemany": round(em_rows / timings["executemany"].median_s),
        },
        "executemany_per_cycle_s_scaled": round(em_full, 2),
        "ingest_vs_executemany": round(em_full / ing, 1),
        "ingest_share_of_30s_cycle": round(ing / CYCLE_S, 4),
        "goal": {"ingest_share_of_30s_cycle": f"<= {GOAL_SHARE}"},
        "met": ing / CYCLE_S <= GOAL_SHARE,
    }

