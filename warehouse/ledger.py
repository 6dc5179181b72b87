"""Typed reads of the month's ledger and per-GPU minute categories (migration 004).

They are written by `Warehouse.store_month_outputs` with the other month outputs, one month replaced
at a time; these functions read one month back in the schemas of sla/results.py.
"""

from __future__ import annotations

import duckdb
import polars as pl

from gpusteward import tables
from gpusteward.domain import Month
from sla.results import IDLE_BY_GPU, LEDGER


def _month(con: duckdb.DuckDBPyConnection, table: str, month: Month, schema: pl.Schema) -> pl.DataFrame:
    frame = con.sql(f'SELECT * FROM "{table}" WHERE month = ?', params=[str(month)]).pl()  # noqa: S608 - fixed names
    return tables.conform(frame, schema) if frame.height else tables.empty(schema)


def month_ledger(con: duckdb.DuckDBPyConnection, month: Month) -> pl.DataFrame:
    """LEDGER rows stored for `month`, in time order."""
    return _month(con, "ledger", month, LEDGER).sort("ts", "cluster", "job_id", "action")


def month_gpu_states(con: duckdb.DuckDBPyConnection, month: Month) -> pl.DataFrame:
    """IDLE_BY_GPU rows stored for `month`."""
    return _month(con, "gpu_states", month, IDLE_BY_GPU).sort("cluster", "host", "gpu")
