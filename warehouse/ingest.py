"""Idempotent ingest of collector batches: a row whose key is stored already is skipped.

Small tables use their primary key (`INSERT OR IGNORE`, or `OR REPLACE` for job records, whose
state changes until they end). GPU-minutes are too many for an index: new rows are found with an
anti-join restricted to the batch's time range, and stored packed (migration 011) behind the
`gpu_minutes` view.
"""

from __future__ import annotations

import duckdb
import polars as pl

from gpusteward import capacity, tables
from gpusteward.errors import InputError
from warehouse.identities import record_identities
from warehouse.sql import run, scalar, unregister

# table -> (schema, conflict action). Jobs are replaced: a RUNNING record later ends.
_KEYED: dict[str, tuple[pl.Schema, str]] = {
    "jobs": (tables.JOBS, "REPLACE"),
    "job_events": (tables.JOB_EVENTS, "IGNORE"),
    "inference_windows": (tables.INFERENCE_WINDOWS, "IGNORE"),
    "quota_snapshots": (tables.QUOTA_SNAPSHOTS, "IGNORE"),
    "quota_usage": (tables.QUOTA_USAGE, "IGNORE"),
    "account_tree": (tables.ACCOUNT_TREE, "IGNORE"),
    "pending_jobs": (tables.PENDING_JOBS, "IGNORE"),
}
_KEYS: dict[str, tuple[str, ...]] = {
    "jobs": tables.JOBS_KEY,
    "job_events": tables.JOB_EVENTS_KEY,
    "inference_windows": tables.INFERENCE_WINDOWS_KEY,
    "quota_snapshots": tables.QUOTA_SNAPSHOTS_KEY,
    "quota_usage": tables.QUOTA_USAGE_KEY,
    "account_tree": tables.ACCOUNT_TREE_KEY,
    "pending_jobs": tables.PENDING_JOBS_KEY,
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
        run(con, f'INSERT OR {action} INTO "{table}" ({cols}) {_source(table, schema)}')
    finally:
        unregister(con, "_batch")
    # Replaced job records are updates: only keys new to the table count as new rows.
    return _count(con, table) - before


def _source(table: str, schema: pl.Schema) -> str:
    """The SELECT feeding the insert. A job record replaced by another read of it keeps the values the
    new read lacks (a `sacct -P` dump's exit code stays when the JSON of the same job, which has none
    in 22.05, comes later; the JSON's priority stays when the `-P` dump comes later)."""
    if table != "jobs":
        return "SELECT " + ", ".join(f'"{c}"' for c in schema) + " FROM _batch"  # noqa: S608 - fixed names
    keys = tables.JOBS_KEY
    picks = [f'b."{c}"' if c in keys else f'coalesce(b."{c}", j."{c}")' for c in schema]
    on = " AND ".join(f'b."{k}" = j."{k}"' for k in keys)
    return f"SELECT {', '.join(picks)} FROM _batch b LEFT JOIN jobs j ON {on}"  # noqa: S608 - fixed names


def _with_shares(gpus: pl.DataFrame, source: str) -> pl.DataFrame:
    """Each GPU row's card and whole-GPU share: 1, or a MIG instance's slices of its card."""
    shares = []
    for profile, model, gpu in gpus.select("mig_profile", "model_name", "gpu").iter_rows():
        if profile is None:
            shares.append(1.0)
            continue
        share = capacity.mig_share(profile, model)
        if isinstance(share, str):
            raise InputError(source, f"GPU {gpu} {share}; no row of the batch was stored")
        shares.append(share)
    return gpus.with_columns(
        pl.Series("share", shares, pl.Float64),
        capacity.card_gpu(pl.col("gpu")).alias("card_gpu"),
    )


def _gpu_keys(con: duckdb.DuckDBPyConnection, frame: pl.DataFrame, source: str) -> pl.DataFrame:
    """Register unseen GPUs and return (cluster, host, gpu) -> gpu_key for the frame's GPUs."""
    seen = _with_shares(
        frame.group_by("cluster", "host", "gpu").agg(
            pl.col("uuid").drop_nulls().last(),
            pl.col("model_name").drop_nulls().last(),
            pl.col("ts").min().alias("first_seen"),
            pl.col("ts").max().alias("last_seen"),
            pl.col("mig_profile").drop_nulls().last(),
        ),
        source,
    )
    con.register("_gpus", seen)
    try:
        run(
            con,
            """
            INSERT INTO gpus (cluster, host, gpu, uuid, model_name, first_seen, last_seen, share, card_gpu, mig_profile)
            SELECT s.cluster, s.host, s.gpu, s.uuid, s.model_name, s.first_seen, s.last_seen, s.share, s.card_gpu,
                   s.mig_profile
            FROM _gpus s ANTI JOIN gpus g USING (cluster, host, gpu)
            """,
        )
        # A MIG instance's profile (and so its share) is the latest seen, like its model name: a
        # re-split card keeps the row number of a GPU_I_ID but may change the profile behind it.
        run(
            con,
            """
            UPDATE gpus SET
                first_seen = least(gpus.first_seen, s.first_seen),
                last_seen = greatest(gpus.last_seen, s.last_seen),
                share = CASE WHEN s.mig_profile IS NULL THEN gpus.share ELSE s.share END,
                mig_profile = coalesce(s.mig_profile, gpus.mig_profile)
            FROM _gpus s
            WHERE gpus.cluster = s.cluster AND gpus.host = s.host AND gpus.gpu = s.gpu
            """,
        )
        keys = con.sql(
            "SELECT g.cluster, g.host, g.gpu, g.gpu_key FROM gpus g SEMI JOIN _gpus s USING (cluster, host, gpu)"
        ).pl()
    finally:
        unregister(con, "_gpus")
    typed: pl.DataFrame = keys.with_columns(pl.col("gpu").cast(pl.Int16), pl.col("gpu_key").cast(pl.Int32))
    return typed


_PER_GPU = ("cluster", "host", "gpu", "uuid", "model_name", "mig_profile")
_MINUTE_COLUMNS = [c for c in tables.GPU_MINUTES if c not in _PER_GPU]
_US_PER_MINUTE = 60_000_000
_EXACT = 2**50  # integer mJ below this are exact in a DOUBLE and leave room for the chain's sums
_CHAIN_LIMIT = 2**60

# Quantised columns are rounded here, in SQL, the same way migration 011 converted old rows.
_PACKED = """
SELECT n.gpu_key, n.minute, j.job_key, n.gpu_util,
       TRY_CAST(round(n.gr_engine_active::DOUBLE * 10000) AS INTEGER) AS engine_e4,
       n.fb_used_mib, n.fb_free_mib,
       TRY_CAST(round(n.power_w::DOUBLE * 10) AS INTEGER) AS power_dw,
       n.temp_c, n.energy_base, n.energy_dir, n.energy_off, n.energy_raw, n.xid, n.pos
FROM _minutes n LEFT JOIN job_labels j ON j.job_id = n.job_id
"""
_PACKED_COLUMNS = (
    "gpu_key, minute, job_key, gpu_util, engine_e4, fb_used_mib, fb_free_mib, power_dw, temp_c,"
    " energy_base, energy_dir, energy_off, energy_raw, xid"
)


def _serpentine(rows: pl.DataFrame) -> pl.DataFrame:
    """Order the batch GPU by GPU, every second GPU backwards in time, and split the energy counter.

    Why backwards: a day file puts ~85 GPUs' same 1,440 minutes in one row group; forwards only,
    `minute` drops by 1,439 at every GPU change and bit-packing pays 11 bits a row for it; with
    alternate directions it steps by -1, 0 or +1 (2 bits).

    Energy: an integer mJ value v is stored as energy_base + energy_dir * energy_off, with base and
    direction constant per GPU and chosen so that energy_off grows along the stored rows, running
    on from the previous GPU's last offset. Its deltas are then one minute's energy even where the
    GPU or the direction changes, and bit-packing keeps 25 bits instead of the counter's 36. Any
    other value (a fraction, NaN, beyond 2^50) is kept as it is in energy_raw.
    """
    e = pl.col("energy_mj")
    whole = e.is_finite() & (e == e.round()) & (e.abs() < _EXACT)
    rows = rows.sort("gpu_key", "minute").with_row_index("_i").with_columns(
        pl.when(whole).then(e).cast(pl.Int64).alias("_v"),
        pl.when(whole).then(None).otherwise(e).alias("energy_raw"),
    )
    ends = (
        rows.group_by("gpu_key", maintain_order=True)
        .agg(pl.col("_i").first().alias("_start"), pl.len().alias("_n"),
             pl.col("_v").drop_nulls().first().alias("_first"), pl.col("_v").drop_nulls().last().alias("_last"))
        .with_columns(
            (pl.int_range(pl.len()) % 2 == 1).alias("_down"),
            (pl.col("_last") - pl.col("_first")).fill_null(0).alias("_span"),
        )
    )
    reach = ends["_span"].cast(pl.Float64).abs().sum()
    before = (
        ends["_span"].cum_sum().shift(1, fill_value=0)
        if reach < _CHAIN_LIMIT
        else pl.zeros(ends.height, pl.Int64, eager=True)  # absurd counters: each GPU its own base
    )
    down = pl.col("_down")
    ends = ends.with_columns(
        pl.when(down).then(pl.col("_last") + before).otherwise(pl.col("_first") - before).alias("energy_base"),
        pl.when(down).then(-1).otherwise(1).cast(pl.Int8).alias("energy_dir"),
    )
    i = pl.col("_i").cast(pl.Int64)
    mirrored = 2 * pl.col("_start").cast(pl.Int64) + pl.col("_n") - 1 - i  # a backwards GPU's rows, reversed
    return (
        rows.join(ends.drop("_first", "_last", "_span"), on="gpu_key", how="left")
        .with_columns(
            (pl.col("energy_dir") * (pl.col("_v") - pl.col("energy_base"))).alias("energy_off"),
            pl.when(down).then(mirrored).otherwise(i).alias("pos"),
        )
        .drop("_i", "_v", "_start", "_n", "_down", "energy_mj")
    )


def _register_jobs(con: duckdb.DuckDBPyConnection, rows: pl.DataFrame) -> None:
    """Give the batch's unseen job ids a key in `job_labels`."""
    jobs = rows.select(pl.col("job_id").drop_nulls().unique())
    if jobs.is_empty():
        return
    con.register("_jobs", jobs)
    try:
        run(con, "INSERT INTO job_labels (job_id) SELECT job_id FROM _jobs ANTI JOIN job_labels USING (job_id)")
    finally:
        unregister(con, "_jobs")


def ingest_gpu_minutes(
    con: duckdb.DuckDBPyConnection, frame: pl.DataFrame, *, source: str = "", changes: list[str] | None = None
) -> int:
    """Insert GPU-minutes not stored yet; return how many were new.

    Minutes are stored as minutes since the epoch, so a `ts` that is not the start of a minute is
    refused rather than moved. The GPUs' identities join their history (warehouse/identities.py);
    each change is appended to `changes`.
    """
    frame = tables.conform(frame, tables.GPU_MINUTES)
    if frame.is_empty():
        return 0
    if (frame["ts"].dt.epoch("us") % _US_PER_MINUTE != 0).any():
        raise ValueError("gpu_minutes: every ts must be the start of a minute")
    keys = _gpu_keys(con, frame, source)
    found = record_identities(con, frame.select("cluster", "host", "gpu", "ts", "uuid", "model_name"), keys, source)
    if changes is not None:
        changes.extend(str(c) for c in found)
    rows = _serpentine(
        frame.join(keys, on=["cluster", "host", "gpu"], how="left")
        .select(["gpu_key", *_MINUTE_COLUMNS])
        .unique(subset=["gpu_key", "ts"], keep="last", maintain_order=False)
        .with_columns((pl.col("ts").dt.epoch("us") // _US_PER_MINUTE).cast(pl.Int32).alias("minute"))
        .drop("ts")
    )
    lo, hi = rows["minute"].min(), rows["minute"].max()
    _register_jobs(con, rows)
    before = _count(con, "gpu_minute_rows")
    con.register("_minutes", rows)
    try:
        # The dedup reads the base table's own `minute`, so zone maps skip the other days.
        run(
            con,
            f"""
            INSERT INTO gpu_minute_rows ({_PACKED_COLUMNS})
            SELECT {_PACKED_COLUMNS} FROM ({_PACKED}) p
            ANTI JOIN (SELECT gpu_key, minute FROM gpu_minute_rows WHERE minute BETWEEN ? AND ?) o
                USING (gpu_key, minute)
            ORDER BY p.pos
            """,  # noqa: S608 - fixed SQL
            [lo, hi],
        )
    finally:
        unregister(con, "_minutes")
    return _count(con, "gpu_minute_rows") - before
