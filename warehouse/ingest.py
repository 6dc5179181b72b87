"""Idempotent ingest of collector batches: a row whose key is stored already is skipped.

Small tables use their primary key (`INSERT OR IGNORE`, or `OR REPLACE` for job records, whose
state changes until they end). GPU-minutes are too many for an index: new rows are found with an
anti-join restricted to the batch's time range.
"""

from __future__ import annotations

import duckdb
import polars as pl

from gpusteward import tables
from warehouse.sql import run, scalar

# table -> (schema, conflict action). Jobs are replaced: a RUNNING record later ends.
_KEYED: dict[str, tuple[pl.Schema, str]] = {
    "jobs": (tables.JOBS, "REPLACE"),
    "job_events": (tables.JOB_EVENTS, "IGNORE"),
    "inference_windows": (tables.INFERENCE_WINDOWS, "IGNORE"),
    "quota_snapshots": (tables.QUOTA_SNAPSHOTS, "IGNORE"),
    "quota_usage": (tables.QUOTA_USAGE, "IGNORE"),
}
_KEYS: dict[str, tuple[str, ...]] = {
    "jobs": tables.JOBS_KEY,
    "job_events": tables.JOB_EVENTS_KEY,
    "inference_windows": tables.INFERENCE_WINDOWS_KEY,
    "quota_snapshots": tables.QUOTA_SNAPSHOTS_KEY,
    "quota_usage": tables.QUOTA_USAGE_KEY,
}


def _count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    return int(scalar(con, f'SELECT count(*) FROM "{table}"'))  # noqa: S608 - fixed table names


def ingest_keyed(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> int:
    """Insert `frame` into a keyed table; return how many rows were new."""
    schema, action = _KEYED[table]
    # DuckDB refuses to touch one key twice in a statement: keep the batch's last row per key.
    frame = tables.conform(frame, schema).unique(subset=list(_KEYS[table]), keep="last", maintain_order=True)
    before = _count(con, table)
    con.register("_batch", frame)
    try:
        cols = ", ".join(f'"{c}"' for c in schema)
        run(con, f'INSERT OR {action} INTO "{table}" ({cols}) SELECT {cols} FROM _batch')  # noqa: S608
    finally:
        con.unregister("_batch")
    # Replaced job records are updates: only keys new to the table count as new rows.
    return _count(con, table) - before


def _gpu_keys(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame) -> pl.DataFrame:
    """Register unseen GPUs and return (cluster, host, gpu) -> gpu_key for the frame's GPUs."""
    seen = frame.group_by("cluster", "host", "gpu").agg(
        pl.col("uuid").drop_nulls().last(),
        pl.col("model_name").drop_nulls().last(),
        pl.col("ts").min().alias("first_seen"),
        pl.col("ts").max().alias("last_seen"),
    )
    con.register("_gpus", seen)
    try:
        run(
            con,
            """
            INSERT INTO gpus (cluster, host, gpu, uuid, model_name, first_seen, last_seen)
            SELECT s.cluster, s.host, s.gpu, s.uuid, s.model_name, s.first_seen, s.last_seen
            FROM _gpus s ANTI JOIN gpus g USING (cluster, host, gpu)
            """,
        )
        run(
            con,
            """
            UPDATE gpus SET
                first_seen = least(gpus.first_seen, s.first_seen),
                last_seen = greatest(gpus.last_seen, s.last_seen),
                uuid = coalesce(s.uuid, gpus.uuid),
                model_name = coalesce(s.model_name, gpus.model_name)
            FROM _gpus s
            WHERE gpus.cluster = s.cluster AND gpus.host = s.host AND gpus.gpu = s.gpu
            """,
        )
        keys = con.sql(
            "SELECT g.cluster, g.host, g.gpu, g.gpu_key FROM gpus g SEMI JOIN _gpus s USING (cluster, host, gpu)"
        ).pl()
    finally:
        con.unregister("_gpus")
    typed: pl.DataFrame = keys.with_columns(pl.col("gpu").cast(pl.Int16), pl.col("gpu_key").cast(pl.Int32))
    return typed


_MINUTE_COLUMNS = [c for c in tables.GPU_MINUTES if c not in ("cluster", "host", "gpu", "uuid", "model_name")]


def ingest_gpu_minutes(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame) -> int:
    """Insert GPU-minutes not stored yet; return how many were new."""
    frame = tables.conform(frame, tables.GPU_MINUTES)
    if frame.is_empty():
        return 0
    keys = _gpu_keys(con, frame)
    rows = (
        frame.join(keys, on=["cluster", "host", "gpu"], how="left")
        .select(["gpu_key", *_MINUTE_COLUMNS])
        .unique(subset=["gpu_key", "ts"], keep="last", maintain_order=False)
        .sort("gpu_key", "ts")
    )
    lo, hi = rows["ts"].min(), rows["ts"].max()
    before = _count(con, "gpu_minutes")
    con.register("_minutes", rows)
    try:
        cols = ", ".join(["gpu_key", *_MINUTE_COLUMNS])
        run(
            con,
            f"""
            INSERT INTO gpu_minutes ({cols})
            SELECT {cols} FROM _minutes n
            ANTI JOIN (SELECT gpu_key, ts FROM gpu_minutes WHERE ts BETWEEN ? AND ?) o USING (gpu_key, ts)
            ORDER BY gpu_key, ts
            """,  # noqa: S608 - column names are ours
            [lo, hi],
        )
    finally:
        con.unregister("_minutes")
    return _count(con, "gpu_minutes") - before
