"""Numbered schema migrations: `migrations/NNN_name.sql`, applied once each, in order."""

from __future__ import annotations

import re
from importlib import resources

import duckdb

from warehouse.sql import run, scalar, transaction

_NAME = re.compile(r"^(\d{3})_[a-z0-9_]+\.sql$")


def available() -> list[tuple[int, str, str]]:
    """(number, file name, SQL) of every migration shipped with the package, in order."""
    found = []
    for entry in resources.files("warehouse.migrations").iterdir():
        m = _NAME.match(entry.name)
        if m:
            found.append((int(m.group(1)), entry.name, entry.read_text(encoding="utf-8")))
    return sorted(found)


def pending(con: duckdb.DuckDBPyConnection) -> list[int]:
    """The numbers of the shipped migrations this database has not applied; [] for a new, empty file."""
    if not _has_migrations_table(con):
        return []
    done = {row[0] for row in run(con, "SELECT number FROM schema_migrations")}
    return [number for number, _name, _sql in available() if number not in done]


def _has_migrations_table(con: duckdb.DuckDBPyConnection) -> bool:
    return bool(scalar(con, "SELECT count(*) FROM duckdb_tables() WHERE table_name = 'schema_migrations'"))


def migrate(con: duckdb.DuckDBPyConnection) -> list[str]:
    """Apply pending migrations, each in its own transaction; return the names applied."""
    run(
        con,
        "CREATE TABLE IF NOT EXISTS schema_migrations (number INTEGER PRIMARY KEY, name VARCHAR, applied_at TIMESTAMP)",
    )
    done = {row[0] for row in run(con, "SELECT number FROM schema_migrations")}
    applied = []
    for number, name, sql in available():
        if number in done:
            continue
        with transaction(con):
            run(con, sql)
            run(con, "INSERT INTO schema_migrations VALUES (?, ?, now()::TIMESTAMP)", [number, name])
        applied.append(name)
    return applied


def current_version(con: duckdb.DuckDBPyConnection) -> int:
    return int(scalar(con, "SELECT coalesce(max(number), 0) FROM schema_migrations"))
