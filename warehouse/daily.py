"""Typed reads of the month's daily usage, failed job records (migration 008, their causes 021) job arrays
and the account tree rolled up (018).

They are written by `Warehouse.store_month_outputs` with the other month outputs, one month replaced
at a time; these functions read one month back in the schemas of sla/results.py.
"""

from __future__ import annotations

import duckdb
import polars as pl

from gpusteward import tables
from gpusteward.domain import Month
from sla.results import ACCOUNT_ROLLUP, ARRAYS, DAILY_USAGE, FAILURES


def _month(con: duckdb.DuckDBPyConnection, table: str, month: Month, schema: pl.Schema) -> pl.DataFrame:
    frame = con.sql(f'SELECT * FROM "{table}" WHERE month = ?', params=[str(month)]).pl()  # noqa: S608 - fixed names
    return tables.conform(frame, schema) if frame.height else tables.empty(schema)


def month_daily_usage(con: duckdb.DuckDBPyConnection, month: Month) -> pl.DataFrame:
    """DAILY_USAGE rows stored for `month`, by day, scenario and team."""
    return _month(con, "daily_usage", month, DAILY_USAGE).sort("day", "scenario", "team")


def month_failures(con: duckdb.DuckDBPyConnection, month: Month) -> pl.DataFrame:
    """FAILURES rows stored for `month`, most records first."""
    keys = ["scenario", "team", "queue", "name", "state", "cause"]
    return _month(con, "failures", month, FAILURES).sort(
        ["records", *keys], descending=[True] + [False] * len(keys), nulls_last=True
    )


def month_arrays(con: duckdb.DuckDBPyConnection, month: Month) -> pl.DataFrame:
    """ARRAYS rows stored for `month`, most tasks first."""
    return _month(con, "month_arrays", month, ARRAYS).sort(
        ["tasks", "cluster", "array_job_id"], descending=[True, False, False]
    )


def month_accounts(con: duckdb.DuckDBPyConnection, month: Month) -> pl.DataFrame:
    """ACCOUNT_ROLLUP rows stored for `month`, in tree order."""
    return _month(con, "month_accounts", month, ACCOUNT_ROLLUP).sort("cluster", "path")
