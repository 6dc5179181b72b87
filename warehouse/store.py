"""The Warehouse: the one owner of the DuckDB connection."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from gpusteward.config.schema import IdleConfig
from gpusteward.domain import Month
from gpusteward.errors import InputError
from sla.common import Window
from sla.inputs import EvaluationInputs
from sla.minute_digest import MinuteDigest
from sla.outputs import MonthOutputs
from warehouse import ingest, quarantine, queries
from warehouse.backup import backup_before_migrating
from warehouse.export import Exported, export_month
from warehouse.migrate import available, current_version, migrate, pending
from warehouse.minute_chunks import DigestEngine, month_digest
from warehouse.quarantine import Quarantined
from warehouse.sql import run, transaction, unregister

INGEST_TABLES = (
    "gpu_minutes", "jobs", "job_events", "inference_windows", "quota_snapshots", "quota_usage", "account_tree",
    "pending_jobs",
)


@dataclass(frozen=True)
class IngestResult:
    source: str
    offered: dict[str, int]
    stored: dict[str, int]
    events: tuple[str, ...] = ()  # what the batch changed beyond its rows: GPU identity changes
    replayed: bool = False  # a spool batch stored before (its id was recorded): nothing stored again


def _naive_utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


class Warehouse:
    """Typed access to the warehouse. Nothing outside this package runs SQL."""

    def __init__(self, con: duckdb.DuckDBPyConnection, path: str, *, read_only: bool) -> None:
        self._con = con
        self.path = path
        self.read_only = read_only

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """For this package's own modules (outbox, read model, quantiles); callers outside it use
        named queries, and import-linter keeps duckdb inside warehouse/."""
        return self._con

    @contextmanager
    def snapshot_view(self) -> Iterator[Warehouse]:
        """A read-only view of the warehouse as committed now, on its own connection (a DuckDB cursor) in
        one transaction: it reads a consistent snapshot (MVCC) while the writer goes on committing, and
        needs no write lock. Open it under the writer's lock (creating the cursor touches this
        connection); read from it in any one thread; its reads never see a later commit."""
        cursor = self._con.cursor()
        try:
            run(cursor, "BEGIN TRANSACTION")
            yield Warehouse(cursor, self.path, read_only=True)
        finally:
            with suppress(duckdb.Error):
                run(cursor, "ROLLBACK")
            cursor.close()

    @contextmanager
    def own_connection(self) -> Iterator[Warehouse]:
        """This warehouse on a connection of its own (a DuckDB cursor): its transactions run beside the
        writer's, under MVCC, so a long write to tables nobody else writes (a month's evaluated outputs)
        need not hold the writer's lock. Open and close it under that lock; use it from one thread."""
        cursor = self._con.cursor()
        try:
            yield Warehouse(cursor, self.path, read_only=self.read_only)
        finally:
            cursor.close()

    def query(self, sql: str, params: Sequence[Any] | None = None) -> pl.DataFrame:
        """Run one of this package's own SELECTs and return a polars frame."""
        frame: pl.DataFrame = self._con.sql(sql, params=list(params) if params else None).pl()
        return frame

    # -- writing -------------------------------------------------------------------------------

    def ingest(
        self,
        source: str,
        frames: Mapping[str, pl.DataFrame],
        problems: Sequence[str] = (),
        *,
        file: FileSignature | None = None,
        unquarantine: tuple[str, str] | None = None,
        spool_batch: SpoolBatchId | None = None,
    ) -> IngestResult:
        """Store one collected batch atomically and record the import run.

        A failure rolls the whole batch back (earlier batches stay) and is recorded as a failed run.
        With `file`, the file's signature is recorded in the same transaction (`imported_files`);
        with `unquarantine` (path, sha256), that file's quarantine records are released in it too;
        with `spool_batch`, its id (`spool_batches`): a batch whose id is recorded already stores nothing.
        """
        try:
            return self._ingest(source, frames, problems, file=file, unquarantine=unquarantine, spool_batch=spool_batch)
        except (duckdb.ConstraintException, duckdb.ConversionException, duckdb.OutOfRangeException) as exc:
            raise InputError(source, f"the warehouse refused its rows, so none were stored: {exc}") from exc

    def _ingest(
        self,
        source: str,
        frames: Mapping[str, pl.DataFrame],
        problems: Sequence[str],
        *,
        file: FileSignature | None,
        unquarantine: tuple[str, str] | None,
        spool_batch: SpoolBatchId | None = None,
    ) -> IngestResult:
        started = datetime.now(UTC).replace(tzinfo=None)
        offered = {name: frame.height for name, frame in frames.items()}
        stored: dict[str, int] = {}
        notes = list(problems)  # and the GPU identity changes the batch brings
        events: list[str] = []
        con = self._con
        with transaction(con):
            if spool_batch is not None and run(
                con, "SELECT 1 FROM spool_batches WHERE batch_id = ?", [spool_batch.batch_id]
            ):
                return IngestResult(source, offered, {}, replayed=True)
            for name, frame in frames.items():
                if name not in INGEST_TABLES:
                    raise ValueError(f"{source}: unknown table {name!r} in batch")
                if name == "gpu_minutes":
                    stored[name] = ingest.ingest_gpu_minutes(con, frame, source=source, changes=events)
                else:
                    stored[name] = ingest.ingest_keyed(con, name, frame)
            lo, hi = _time_range(frames)
            run(
                con,
                "INSERT INTO import_runs (source, started_at, finished_at, status, rows_offered, rows_stored,"
                " min_ts, max_ts, problems) VALUES (?, ?, now()::TIMESTAMP, 'ok', ?, ?, ?, ?, ?)",
                [source, started, json.dumps(offered), json.dumps(stored), lo, hi, json.dumps(notes + events)],
            )
            if file is not None:
                _remember_file(con, file, "ok")
            if unquarantine is not None:
                quarantine.release(con, *unquarantine)
            if spool_batch is not None:
                run(
                    con,
                    "INSERT INTO spool_batches (batch_id, source, collected_at, stored_at, rows_stored)"
                    " VALUES (?, ?, ?, now()::TIMESTAMP, ?)",
                    [spool_batch.batch_id, source, _naive_utc(spool_batch.collected_at), json.dumps(stored)],
                )
        return IngestResult(source, offered, stored, tuple(events))

    def record_failed_import(
        self, source: str, error: str, *, file: FileSignature | None = None, quarantined: Quarantined | None = None
    ) -> None:
        """A failed import run; with `file` its signature, with `quarantined` its quarantine record."""
        with transaction(self._con):
            run(
                self._con,
                "INSERT INTO import_runs (source, started_at, finished_at, status, problems)"
                " VALUES (?, now()::TIMESTAMP, now()::TIMESTAMP, 'failed', ?)",
                [source, json.dumps([error])],
            )
            if file is not None:
                _remember_file(self._con, file, "failed")
            if quarantined is not None:
                quarantine.record(self._con, quarantined)

    def remember_skipped(self, file: FileSignature) -> None:
        """A file seen but not read (quarantined content): a restart does not look at it again."""
        with transaction(self._con):
            _remember_file(self._con, file, "failed")

    def quarantine_entry(self, name: str, sha256: str) -> dict[str, Any] | None:
        """The quarantine record of file `name` with this content, or None."""
        return quarantine.find(self._con, name, sha256)

    def quarantined(self) -> pl.DataFrame:
        """Every quarantined file, most recently seen first."""
        return quarantine.entries(self._con)

    def gpu_identity_history(self) -> pl.DataFrame:
        """cluster, host, gpu, valid_from, valid_to (null: still valid), uuid, model_name, by GPU and time."""
        return self.query(
            "SELECT cluster, host, gpu, valid_from, valid_to, uuid, model_name FROM gpu_identity_history"
            " ORDER BY cluster, host, gpu, valid_from"
        )

    def gpu_identity_changes(self) -> pl.DataFrame:
        """Every recorded change of a GPU's UUID or model: when, from, to, and the batch that showed it."""
        return self.query(
            "SELECT g.cluster, g.host, g.gpu, c.ts, c.old_uuid, c.old_model_name, c.new_uuid, c.new_model_name,"
            " c.source FROM gpu_identity_changes c JOIN gpus g USING (gpu_key) ORDER BY g.cluster, g.host, g.gpu, c.ts"
        )

    def imported_files(self) -> dict[str, FileSignature]:
        """Every file recorded by `ingest(file=...)` or `record_failed_import(file=...)`, by path."""
        rows = run(self._con, "SELECT path, mtime, size FROM imported_files")
        return {path: FileSignature(path, float(mtime), int(size)) for path, mtime, size in rows}

    def store_month_outputs(self, outputs: MonthOutputs) -> None:
        """Replace the month's evaluated outputs in one transaction."""
        month = str(outputs.month)
        parts = {
            "sla_results": outputs.results,
            "idle_by_job": outputs.idle,
            "breach_episodes": outputs.episodes,
            "usage": outputs.usage,
            "completeness": outputs.completeness,
            "ledger": outputs.ledger,
            "gpu_states": outputs.gpu_states,
            "daily_usage": outputs.daily_usage,
            "failures": outputs.failures,
            "month_arrays": outputs.arrays,
            "month_accounts": outputs.accounts,
        }
        con = self._con
        with transaction(con):
            for table, frame in parts.items():
                run(con, f'DELETE FROM "{table}" WHERE month = ?', [month])  # noqa: S608 - fixed names
                _insert(con, table, frame.with_columns(pl.lit(month).alias("month")))

    def store_plan(
        self,
        plan_id: str,
        month: Month,
        created_at: datetime,
        status: str,
        *,
        dry_run: bool,
        body: dict[str, Any],
        items: pl.DataFrame,
    ) -> None:
        con = self._con
        with transaction(con):
            run(con, "DELETE FROM quota_plan_items WHERE plan_id = ?", [plan_id])
            run(
                con,
                "INSERT OR REPLACE INTO quota_plans VALUES (?, ?, ?, ?, ?, ?)",
                [plan_id, str(month), _naive_utc(created_at), status, dry_run, json.dumps(body, default=str)],
            )
            _insert(con, "quota_plan_items", items)

    def record_alerts(self, month: Month, alerts: Sequence[Mapping[str, Any]]) -> int:
        """Record alerts (fingerprint, status, ...) once each; return how many were new."""
        if not alerts:
            return 0
        rows = pl.DataFrame(
            [
                {
                    "fingerprint": a["fingerprint"],
                    "status": a["status"],
                    "month": str(month),
                    "line": a.get("line"),
                    "subject": a.get("subject"),
                    "severity": a.get("severity"),
                    "starts_at": a.get("starts_at"),
                    "ends_at": a.get("ends_at"),
                    "summary": a.get("summary"),
                    "body": json.dumps(a.get("body", {}), default=str),
                    "recorded_at": datetime.now(UTC).replace(tzinfo=None),
                }
                for a in alerts
            ],
            schema_overrides={"starts_at": pl.Datetime("us"), "ends_at": pl.Datetime("us")},
        )
        before = self.count("alerts")
        self._con.register("_alerts", rows)
        try:
            run(self._con, "INSERT OR IGNORE INTO alerts SELECT * FROM _alerts")
        finally:
            unregister(self._con, "_alerts")
        return self.count("alerts") - before

    # -- reading -------------------------------------------------------------------------------

    def count(self, table: str) -> int:
        return queries.count(self._con, table)

    def counts(self) -> dict[str, int]:
        return {t: self.count(t) for t in queries.USER_TABLES}

    def evaluation_inputs(
        self,
        month: Month,
        *,
        idle: IdleConfig | None = None,
        chunk_rows: int | None = None,
        engine: DigestEngine = "duckdb",
        digester: queries.Digester | None = None,
    ) -> EvaluationInputs:
        """The month's evaluation inputs; see queries.evaluation_inputs (`idle`: digested GPU-minutes)."""
        return queries.evaluation_inputs(
            self._con, month, idle=idle, chunk_rows=chunk_rows, engine=engine, digester=digester
        )

    def data_end(self) -> datetime | None:
        return queries.data_end(self._con)

    def month_digest(self, window: Window, idle: IdleConfig, *, engine: DigestEngine = "duckdb") -> MinuteDigest:
        """The minute digest of `window` by `engine` (warehouse.minute_chunks.month_digest)."""
        return month_digest(self._con, window, idle, engine=engine)

    def export_month(self, month: Month, dest: str) -> Exported:
        """Write the month's GPU-minutes as Hive-partitioned Parquet under `dest` (warehouse.export)."""
        return export_month(self._con, month, dest)

    def slurm_queue(self, month: Month) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        """(PENDING_JOBS, ACCOUNT_TREE, QUOTA_USAGE) of the month; see queries.slurm_queue."""
        return queries.slurm_queue(self._con, month)

    def completeness(self, month: Month) -> pl.DataFrame:
        return queries.completeness(self._con, month)

    def month_outputs(self, month: Month) -> MonthOutputs:
        return queries.month_outputs(self._con, month)

    def month_episodes(self, month: Month) -> pl.DataFrame:
        """The month's stored breach episodes alone (what the alert engine reads every few minutes)."""
        return queries.month_episodes(self._con, month)

    def months(self) -> list[Month]:
        """Months that have evaluated outputs, oldest first."""
        return [Month.parse(m) for m in queries.output_months(self._con)]

    def data_months(self, tz: str = "UTC") -> list[Month]:
        """Months of `tz` (the pool's time zone) that have any telemetry or job data, oldest first."""
        return [Month.parse(m, tz) for m in queries.data_months(self._con, tz)]

    def alerts(self, month: Month | None = None) -> pl.DataFrame:
        return queries.alerts(self._con, month)

    def plans(self, month: Month | None = None) -> pl.DataFrame:
        return queries.plans(self._con, month)

    def status(self, tz: str = "UTC") -> dict[str, Any]:
        """Row counts, time coverage and completeness per month of `tz` (the pool's time zone)."""
        return queries.status(self._con, tz) | {
            "path": self.path,
            "schema_version": current_version(self._con),
            "quarantine": quarantine.listing(self._con),
        }


@dataclass(frozen=True)
class SpoolBatchId:
    """A batch of the service's collection spool: its id is stored with its rows, once."""

    batch_id: str
    collected_at: datetime


@dataclass(frozen=True)
class FileSignature:
    """A file as it was when read: a later change of mtime or size means it must be read again."""

    path: str
    mtime: float
    size: int


def _remember_file(con: duckdb.DuckDBPyConnection, file: FileSignature, status: str) -> None:
    run(
        con,
        "INSERT OR REPLACE INTO imported_files (path, mtime, size, status, imported_at)"
        " VALUES (?, ?, ?, ?, now()::TIMESTAMP)",
        [file.path, file.mtime, file.size, status],
    )


def _time_range(frames: Mapping[str, pl.DataFrame]) -> tuple[datetime | None, datetime | None]:
    lo: datetime | None = None
    hi: datetime | None = None
    for name, frame in frames.items():
        column = "submit_time" if name == "jobs" else "ts"
        if frame.is_empty() or column not in frame.columns:
            continue
        fmin, fmax = frame[column].min(), frame[column].max()
        if isinstance(fmin, datetime):
            lo = fmin if lo is None else min(lo, fmin)
        if isinstance(fmax, datetime):
            hi = fmax if hi is None else max(hi, fmax)
    return lo, hi


def _insert(con: duckdb.DuckDBPyConnection, table: str, frame: pl.DataFrame) -> None:
    if frame.is_empty():
        return
    con.register("_rows", frame)
    try:
        cols = ", ".join(f'"{c}"' for c in frame.columns)
        run(con, f'INSERT INTO "{table}" ({cols}) SELECT {cols} FROM _rows')  # noqa: S608 - our columns
    finally:
        unregister(con, "_rows")


@contextmanager
def open_warehouse(
    path: str | Path, *, read_only: bool = False, threads: int = 2, memory_limit: str = "4GB"
) -> Iterator[Warehouse]:
    """Open (and, when writable, create and migrate) the warehouse at `path`.

    An existing warehouse with pending migrations is first copied beside itself (warehouse/backup.py).
    Read-only connections cannot reach the file system through SQL (external access disabled).
    """
    p = str(path)
    config: dict[str, Any] = {"threads": threads, "memory_limit": memory_limit}
    if read_only:
        if not Path(p).exists():
            raise FileNotFoundError(f"{p}: no warehouse here (run `gpusteward import` first)")
        config["enable_external_access"] = False
    else:
        Path(p).parent.mkdir(parents=True, exist_ok=True)
    con = duckdb.connect(p, read_only=read_only, config=config)
    try:
        # A long query would draw a progress bar on stderr, which is the service's log.
        run(con, "SET enable_progress_bar = false")
        if not read_only:
            waiting = pending(con)
            if waiting:
                backup_before_migrating(con, Path(p), waiting[0])
            migrate(con)
        else:
            _require_current_schema(con, p)
        yield Warehouse(con, p, read_only=read_only)
    finally:
        con.close()


def _require_current_schema(con: duckdb.DuckDBPyConnection, path: str) -> None:
    """A read-only reader cannot migrate: an older schema would fail later with a bare catalog error."""
    latest = available()[-1][0]
    found = current_version(con)
    if found < latest:
        raise RuntimeError(
            f"{path}: the warehouse schema is version {found}, this GPU Steward reads version {latest}; "
            "open it once for writing to migrate it (e.g. `gpusteward import` or `gpusteward serve`)"
        )
