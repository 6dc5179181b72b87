"""The SQL minute digest run inside DuckDB: over the warehouse's packed GPU-minutes, or over a frame."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

import duckdb
import polars as pl

from gpusteward.config.schema import IdleConfig
from gpusteward.tables import GPU_MINUTES, conform
from sla.common import Window
from sla.minute_digest import MinuteDigest, gpu_shares
from warehouse.digest.dialect import DUCKDB
from warehouse.digest.statements import Relations, statements, to_digest
from warehouse.sql import run

# The packed table's own columns (migration 011), with GR_ENGINE_ACTIVE as the `gpu_minutes` view
# computes it, so the SQL digest sees the very values the Python digest reads through the view.
_PACKED = (
    "SELECT gpu_key, minute, job_key, gpu_util, (engine_e4 / 10000)::REAL AS gr_engine_active, fb_used_mib"
    " FROM gpu_minute_rows"
)


def run_digest(con: duckdb.DuckDBPyConnection, relations: Relations, window: Window, idle: IdleConfig) -> MinuteDigest:
    """The digest of `relations`' GPU-minutes in `window`, computed by DuckDB; only the digest leaves it.

    The intermediate tables are temporary tables of `con`: give it a connection (a cursor) of its own.
    """
    frames: dict[str, pl.DataFrame] = {}
    made: list[str] = []
    try:
        for statement in statements(DUCKDB, relations, window, idle):
            if statement.kind == "output":
                frames[statement.name] = con.sql(statement.sql).pl()
                continue
            kind = statement.kind.upper()
            run(con, f"CREATE OR REPLACE TEMP {kind} {statement.name} AS {statement.sql}")
            made.append(f"{kind} IF EXISTS {statement.name}")
    finally:
        for dropped in reversed(made):
            run(con, f"DROP {dropped}")
    return to_digest(frames, window, idle)


def warehouse_relations(gpu_keys: Sequence[int] | None = None) -> Relations:
    """The warehouse's GPU-minutes (only those of `gpu_keys` when given) and its key tables."""
    minutes = _PACKED
    if gpu_keys is not None:
        keys = sorted(int(k) for k in gpu_keys)
        listed = ", ".join(str(k) for k in keys) if keys else "NULL"
        minutes += f" WHERE gpu_key BETWEEN {keys[0] if keys else 0} AND {keys[-1] if keys else -1}"
        minutes += f" AND gpu_key IN ({listed})"
    return Relations(minutes=f"({minutes})", gpus="gpus", jobs="job_labels")


def warehouse_digest(
    con: duckdb.DuckDBPyConnection, window: Window, idle: IdleConfig, gpu_keys: Sequence[int] | None = None
) -> MinuteDigest:
    """The SQL digest of the warehouse's GPU-minutes in `window` (of `gpu_keys`' GPUs only, when given).

    Runs on a cursor of its own, whose temporary tables digests on other cursors neither see nor disturb.
    """
    with con.cursor() as cursor:
        return run_digest(cursor, warehouse_relations(gpu_keys), window, idle)


_EPOCH = datetime(1970, 1, 1)


def frame_relations(gpu_minutes: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """GPU_MINUTES rows as the digest's three relations: (minutes, gpus, jobs) with integer keys, each
    GPU with its share (sla.minute_digest.gpu_shares, as the warehouse's `gpus.share`)."""
    gm = conform(gpu_minutes, GPU_MINUTES)
    repeated = gm.select("cluster", "host", "gpu", "ts").is_duplicated()
    if repeated.any():
        first = gm.filter(repeated).row(0, named=True)
        raise ValueError(
            f"GPU-minutes repeat a (cluster, host, gpu, ts): {first['cluster']}/{first['host']}/{first['gpu']}"
            f" at {first['ts']}; the SQL digest needs one row per GPU-minute (the warehouse's key)"
        )
    gpus = gpu_shares(gm).sort("cluster", "host", "gpu").with_row_index("gpu_key")
    jobs = gm.select(pl.col("job_id").drop_nulls().unique().sort()).with_row_index("job_key")
    minutes = (
        gm.join(gpus, on=["cluster", "host", "gpu"], how="left")
        .join(jobs, on="job_id", how="left")
        .select(
            pl.col("gpu_key").cast(pl.Int32),
            ((pl.col("ts") - pl.lit(_EPOCH)).dt.total_minutes()).cast(pl.Int64).alias("minute"),
            pl.col("job_key").cast(pl.Int32),
            "gpu_util",
            "gr_engine_active",
            "fb_used_mib",
        )
    )
    gpus = gpus.with_columns(pl.col("gpu_key").cast(pl.Int32))
    return minutes, gpus, jobs.with_columns(pl.col("job_key").cast(pl.Int32))


def frame_digest(gpu_minutes: pl.DataFrame, window: Window, idle: IdleConfig) -> MinuteDigest:
    """The SQL digest of a GPU_MINUTES frame, in an in-memory DuckDB (what the tests set against the
    Python digest, sla.minute_digest.digest_minutes)."""
    minutes, gpus, jobs = frame_relations(gpu_minutes)
    with duckdb.connect(":memory:") as con:
        con.register("dg_input", minutes)
        con.register("dg_gpus", gpus)
        con.register("dg_jobs", jobs)
        return run_digest(con, Relations(minutes="dg_input", gpus="dg_gpus", jobs="dg_jobs"), window, idle)
