"""Statement helpers: DuckDB 2 blocks a connection until a result is fully fetched."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from typing import Any

import duckdb


def run(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> list[tuple[Any, ...]]:
    """Execute one statement and fetch all of its result, freeing the connection."""
    return con.execute(sql, params).fetchall() if params is not None else con.execute(sql).fetchall()


def scalar(con: duckdb.DuckDBPyConnection, sql: str, params: Sequence[Any] | None = None) -> Any:
    rows = run(con, sql, params)
    return rows[0][0] if rows else None


@contextmanager
def transaction(con: duckdb.DuckDBPyConnection) -> Iterator[None]:
    """BEGIN ... COMMIT, rolled back on any error; the original error is the one raised.

    A COMMIT that fails (a full disk) has already been rolled back by DuckDB, so the ROLLBACK
    here may find no transaction: that second error must not hide the first.
    """
    run(con, "BEGIN TRANSACTION")
    try:
        yield
        run(con, "COMMIT")
    except BaseException:
        with suppress(duckdb.Error):
            run(con, "ROLLBACK")
        raise


def unregister(con: duckdb.DuckDBPyConnection, name: str) -> None:
    """Drop a frame registered as view `name`. After a failed statement DuckDB refuses this too, until
    the ROLLBACK (which drops the view anyway); that second error must not hide the first."""
    with suppress(duckdb.TransactionException):
        con.unregister(name)
