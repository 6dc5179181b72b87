"""Bytes per sample on disk: a month of 1-minute GPU data for 1,000 GPUs, after CHECKPOINT.

Goes through the real ingest path (`Warehouse.ingest`, one batch per day, as the importer stores a
day file) with synthetic typed GPU-minute frames (bench._frames: DCGM-like values with their noise).
A sample is one metric value of one GPU-minute: eight metric columns per row (util, engine,
frame buffer used and free, power, temperature, energy, XID); job ids are labels, not samples.
The figure is the warehouse file's growth over an empty, migrated warehouse, divided by samples.

Anchors: Prometheus documents "around 1-2 bytes per sample"; Gorilla (VLDB 2015) 1.37. Goal <= 1.4.
`--quick`: 80 GPUs for 7 days (small blocks weigh more; the figure is indicative only).
"""

from __future__ import annotations

import tempfile
import time
from collections import Counter
from datetime import datetime
from pathlib import Path
from typing import Any

from bench._frames import day_frame, last_energy
from warehouse import open_warehouse
from warehouse.sql import run as sql

METRIC_COLUMNS = (
    "gpu_util", "gr_engine_active", "fb_used_mib", "fb_free_mib", "power_w", "temp_c", "energy_mj", "xid"
)
METRICS_PER_ROW = len(METRIC_COLUMNS)
GOAL = 1.4
START = datetime(2026, 10, 1)


def _compressions(db: Path) -> dict[str, dict[str, int]]:
    """Segments per column and compression kind: why a column is large."""
    with open_warehouse(db, read_only=True) as wh:
        rows = sql(
            wh.connection,
            "SELECT column_name, compression, count(*) FROM pragma_storage_info('gpu_minute_rows')"
            " WHERE segment_type <> 'VALIDITY' GROUP BY ALL ORDER BY ALL",
        )
    out: dict[str, Counter[str]] = {}
    for column, compression, count in rows:
        out.setdefault(str(column), Counter())[str(compression)] += int(count)
    return {c: dict(k) for c, k in out.items()}


def _bytes_in_file(db: Path, rows: int) -> dict[str, float]:
    """Bytes per row of each stored column as laid out in the warehouse file.

    Segments share blocks: a segment owns the bytes up to the next segment in its block (the last
    one, the block's free tail too, so the columns add up to the table's blocks).
    """
    with open_warehouse(db, read_only=True) as wh:
        block = int(sql(wh.connection, "SELECT block_size FROM pragma_database_size()")[0][0])
        segments = sql(
            wh.connection,
            "SELECT column_name, block_id, block_offset, len(additional_block_ids)"
            " FROM pragma_storage_info('gpu_minute_rows') WHERE block_id >= 0",
        )
    per_block: dict[int, list[tuple[int, str]]] = {}
    owned: Counter[str] = Counter()
    for column, block_id, offset, extra in segments:
        per_block.setdefault(int(block_id), []).append((int(offset), str(column)))
        owned[str(column)] += int(extra) * block
    for parts in per_block.values():
        parts.sort()
        ends = [o for o, _ in parts[1:]] + [block]
        for (offset, column), end in zip(parts, ends, strict=True):
            owned[column] += end - offset
    return {c: round(n / rows, 3) for c, n in sorted(owned.items())}


def _column_bytes(db: Path, work: Path, rows: int) -> dict[str, float]:
    """Bytes per value of each stored column alone (in table order): where the bytes go.

    An upper bound: alone, a segment that fills 60% of a block keeps the whole block, where in the
    warehouse other columns' segments share it.
    """
    out: dict[str, float] = {}
    with open_warehouse(db) as wh:
        con = wh.connection
        columns = [str(r[0]) for r in sql(con, "SELECT column_name FROM duckdb_columns()"
                                               " WHERE table_name = 'gpu_minute_rows' ORDER BY column_index")]
        base = work / "empty-col.duckdb"
        sql(con, f"ATTACH '{base}' AS e")
        sql(con, "CREATE TABLE e.t (x INTEGER)")
        sql(con, "DETACH e")
        empty = base.stat().st_size
        for column in columns:
            path = work / f"col-{column}.duckdb"
            sql(con, f"ATTACH '{path}' AS c")
            sql(con, f'CREATE TABLE c.t AS SELECT "{column}" FROM gpu_minute_rows')
            sql(con, "CHECKPOINT c")
            sql(con, "DETACH c")
            out[column] = round((path.stat().st_size - empty) / rows, 3)
            path.unlink()
    return out


def run(quick: bool) -> dict[str, Any]:
    gpus, days = (80, 7) if quick else (1000, 30)
    with tempfile.TemporaryDirectory(prefix="gpusteward-storage-") as tmp:
        db = Path(tmp) / "storage.duckdb"
        with open_warehouse(db) as wh:
            sql(wh.connection, "CHECKPOINT")
        empty = db.stat().st_size
        started = time.perf_counter()
        rows = 0
        with open_warehouse(db) as wh:
            energy = None
            for day in range(days):
                frame = day_frame(day, gpus, start=START, energy0=energy)
                energy = last_energy(frame, gpus)
                rows += wh.ingest(f"bench-day-{day}", {"gpu_minutes": frame}).stored["gpu_minutes"]
                del frame
            sql(wh.connection, "CHECKPOINT")
        ingest_s = time.perf_counter() - started
        size = db.stat().st_size
        wal = Path(f"{db}.wal")
        size += wal.stat().st_size if wal.exists() else 0
        compressions = _compressions(db)
        in_file = _bytes_in_file(db, rows)
        by_column = _column_bytes(db, Path(tmp), rows)
    samples = rows * METRICS_PER_ROW
    per_sample = (size - empty) / samples
    return {
        "benchmark": "storage",
        "gpus": gpus,
        "days": days,
        "gpu_minute_rows": rows,
        "samples": samples,
        "file_bytes": size,
        "empty_warehouse_bytes": empty,
        "bytes_per_sample": round(per_sample, 3),
        "bytes_per_row": round((size - empty) / rows, 2),
        "ingest_s": round(ingest_s, 1),
        "goal_bytes_per_sample": f"<= {GOAL}",
        "met": per_sample <= GOAL,
        "over_goal_pct": round(100 * (per_sample / GOAL - 1), 1),
        "anchors": {"prometheus_docs": "1-2", "gorilla_vldb_2015": 1.37},
        "bytes_per_row_by_column_in_file": in_file,
        "bytes_per_value_by_column_alone": by_column,
        "compression_by_column": compressions,
    }
