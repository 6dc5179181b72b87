"""A month's GPU-minutes a few whole hosts at a time, and the evaluation's digest built from them
(by the SQL digest inside DuckDB, or by the Python reference over the rows read out).

The evaluation needs sums, gaps and idle runs, never the month's minutes at once
(sla.minute_digest): reading them a chunk of hosts at a time bounds memory by the chunk, not the
fleet. Hosts are taken in the order of their GPU keys and each chunk query also bounds the key,
so a warehouse written a day file at a time (rows sorted by key within each day) lets DuckDB skip
the row groups of other hosts.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Literal

import duckdb
import polars as pl

from gpusteward import tables
from gpusteward.config.schema import IdleConfig
from sla.common import Window
from sla.minute_digest import MinuteDigest, digest_minutes, merge_digests
from warehouse.digest.duckdb_digest import warehouse_digest
from warehouse.sql import run, unregister

DigestEngine = Literal["duckdb", "python"]
DIGEST_ENGINES: tuple[DigestEngine, ...] = ("duckdb", "python")

SQL_CHUNK_ROWS = 50_000_000
"""GPU-minutes per chunk for the SQL digest, a month of ~1,100 GPUs: DuckDB sorts each chunk's rows
for its window functions (about 40 bytes a row, within the warehouse's 4 GB memory limit), and no
row leaves the engine, so chunks can be far larger than the Python digest's."""

CHUNK_ROWS = 4_000_000
"""GPU-minutes per chunk, a month of ~90 GPUs: a month's review peaks at 4.2 GiB for 1,000 GPUs and
8.1 GiB for 10,000 (docs/performance.md, "Scale"), the chunk's frames being about 250 MB of it."""


def host_chunks(con: duckdb.DuckDBPyConnection, lo: datetime, hi: datetime, chunk_rows: int) -> list[list[int]]:
    """GPU keys of [lo, hi)'s rows, whole hosts per list, each list at most `chunk_rows` rows (or one host)."""
    per_host = run(
        con,
        # The packed table's own `minute` (migration 011): counting needs no view, no job labels.
        "SELECT list(m.gpu_key ORDER BY m.gpu_key), sum(m.n)::BIGINT FROM ("
        "  SELECT gpu_key, count(*) AS n FROM gpu_minute_rows"
        "  WHERE minute >= epoch_us(?::TIMESTAMP) // 60000000 AND minute < epoch_us(?::TIMESTAMP) // 60000000"
        "  GROUP BY gpu_key"
        ") m JOIN gpus g USING (gpu_key) GROUP BY g.cluster, g.host ORDER BY min(m.gpu_key)",
        [lo, hi],
    )
    chunks: list[list[int]] = []
    rows = 0
    for keys, n in per_host:
        if not chunks or rows + int(n) > chunk_rows:
            chunks.append([])
            rows = 0
        chunks[-1].extend(int(k) for k in keys)
        rows += int(n)
    return chunks


def minute_chunks(
    con: duckdb.DuckDBPyConnection, lo: datetime, hi: datetime, chunk_rows: int = CHUNK_ROWS
) -> Iterator[pl.DataFrame]:
    """GPU_MINUTES frames of [lo, hi), each holding every row of its hosts (uuid null; a MIG instance's
    rows with its profile and model name, so the Python digest weighs it by its share; model_name null
    on whole GPUs)."""
    for keys in host_chunks(con, lo, hi, chunk_rows):
        con.register("_chunk_keys", pl.DataFrame({"gpu_key": keys}, schema={"gpu_key": pl.Int32}))
        try:
            frame = con.sql(
                "SELECT g.cluster, g.host, g.gpu, NULL::VARCHAR AS uuid,"
                " CASE WHEN g.mig_profile IS NOT NULL THEN g.model_name END AS model_name, g.mig_profile,"
                " m.* EXCLUDE (gpu_key) FROM gpu_minutes m JOIN gpus g USING (gpu_key)"
                " WHERE m.ts >= ? AND m.ts < ? AND m.gpu_key BETWEEN ? AND ?"
                " AND m.gpu_key IN (SELECT gpu_key FROM _chunk_keys)"
                # GPU by GPU in time order (what the digest needs); integer keys sort far faster than names.
                " ORDER BY m.gpu_key, m.ts",
                params=[lo, hi, min(keys), max(keys)],
            ).pl()
        finally:
            unregister(con, "_chunk_keys")
        yield tables.conform(frame, tables.GPU_MINUTES)


def month_digest(
    con: duckdb.DuckDBPyConnection,
    window: Window,
    idle: IdleConfig,
    chunk_rows: int | None = None,
    engine: DigestEngine = "duckdb",
) -> MinuteDigest:
    """The evaluation's digest of the window's GPU-minutes, a chunk of hosts at a time.

    engine "duckdb": the SQL digest (warehouse/digest) runs inside DuckDB and only the digest leaves
    it; "python": the chunk's rows are read out and digested by sla.minute_digest, the reference.
    Both give the same digest (tests/warehouse/test_sql_digest.py); "duckdb" is the faster
    (docs/performance.md, "The minute digest in SQL").
    """
    if engine == "python":
        frames = minute_chunks(con, window.start, window.end, chunk_rows or CHUNK_ROWS)
        parts = [digest_minutes(frame, window, idle) for frame in frames]
    elif engine == "duckdb":
        chunks = host_chunks(con, window.start, window.end, chunk_rows or SQL_CHUNK_ROWS)
        parts = [warehouse_digest(con, window, idle, keys) for keys in chunks]
    else:
        raise ValueError(f"unknown digest engine {engine!r}: use one of {', '.join(DIGEST_ENGINES)}")
    return merge_digests(parts, window, idle)
