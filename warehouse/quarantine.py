"""Files an import could not read (`quarantined_files`), remembered by name and content hash.

A quarantined file is skipped while its content is unchanged; a file with new content under any
name is read again. Recording a file and its failed import run happen in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from warehouse.sql import run

COLUMNS = (
    "name", "sha256", "path", "size", "reason", "error_type", "source", "first_seen", "last_seen", "attempts"
)


@dataclass(frozen=True)
class Quarantined:
    """One file that could not be read, as an import saw it."""

    name: str
    sha256: str
    path: str
    size: int
    reason: str
    error_type: str
    source: str


def record(con: duckdb.DuckDBPyConnection, entry: Quarantined) -> None:
    """Add `entry`, or count one more failed read of a file already quarantined."""
    run(
        con,
        "INSERT INTO quarantined_files (name, sha256, path, size, reason, error_type, source, first_seen, last_seen,"
        " attempts) VALUES (?, ?, ?, ?, ?, ?, ?, now() AT TIME ZONE 'UTC', now() AT TIME ZONE 'UTC', 1)"
        " ON CONFLICT (name, sha256) DO UPDATE SET path = excluded.path, reason = excluded.reason,"
        " error_type = excluded.error_type, source = excluded.source, last_seen = excluded.last_seen,"
        " attempts = quarantined_files.attempts + 1",
        [entry.name, entry.sha256, entry.path, entry.size, entry.reason, entry.error_type, entry.source],
    )


def find(con: duckdb.DuckDBPyConnection, name: str, sha256: str) -> dict[str, Any] | None:
    rows = con.execute(
        f"SELECT {', '.join(COLUMNS)} FROM quarantined_files WHERE name = ? AND sha256 = ?",  # noqa: S608
        [name, sha256],
    ).fetchall()
    return dict(zip(COLUMNS, rows[0], strict=True)) if rows else None


def release(con: duckdb.DuckDBPyConnection, path: str, sha256: str) -> int:
    """Forget a file that was read after all: its records with this content, or last seen at `path`."""
    found = run(
        con,
        "DELETE FROM quarantined_files WHERE name = ? AND (sha256 = ? OR path = ?) RETURNING 1",
        [Path(path).name, sha256, path],
    )
    return len(found)


def entries(con: duckdb.DuckDBPyConnection) -> pl.DataFrame:
    """Every quarantined file, most recently seen first."""
    frame: pl.DataFrame = con.sql(
        f"SELECT {', '.join(COLUMNS)} FROM quarantined_files ORDER BY last_seen DESC, path"  # noqa: S608
    ).pl()
    return frame


def listing(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """`entries` as JSON-ready rows (times as ISO text), for `gpusteward status`."""
    return [
        {k: v.isoformat() if isinstance(v, datetime) else v for k, v in row.items()}
        for row in entries(con).iter_rows(named=True)
    ]
