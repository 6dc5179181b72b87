from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusteward import tables
from warehouse import Warehouse, open_warehouse
from warehouse import migrate as migrations

T0 = datetime(2026, 11, 1)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "w.duckdb"


@pytest.fixture
def wh(db_path: Path) -> Iterator[Warehouse]:
    with open_warehouse(db_path) as w:
        yield w


def gpu_minutes(host: str, gpus: int, minutes: range, *, cluster: str = "east", skip: range = range(0)) -> pl.DataFrame:
    rows = [
        {
            "cluster": cluster,
            "host": host,
            "gpu": g,
            "uuid": f"GPU-{host}-{g}",
            "model_name": "H100",
            "ts": T0 + timedelta(minutes=m),
            "gpu_util": float((m * 7 + g) % 100),
            "job_id": "42" if m % 2 else None,
        }
        for g in range(gpus)
        for m in minutes
        if m not in skip
    ]
    return tables.conform(pl.DataFrame(rows), tables.GPU_MINUTES)


def job(job_id: int, submit: datetime, state: str = "COMPLETED", **extra: object) -> dict[str, object]:
    return {
        "cluster": "east",
        "job_id": job_id,
        "submit_time": submit,
        "state": state,
        "partition": "train",
        "account": "nlp",
        "gpus_allocated": 2,
        "start_time": submit + timedelta(minutes=5),
        "end_time": submit + timedelta(hours=1),
    } | extra


@contextmanager
def schema_before(
    path: Path, monkeypatch: pytest.MonkeyPatch, number: int
) -> Iterator[tuple[duckdb.DuckDBPyConnection, Callable[[], list[str]]]]:
    """A database file at the schema before migration `number` (to store rows as an older version did), and a
    call that applies the shipped migrations from there and returns their names."""
    shipped = migrations.available()
    monkeypatch.setattr(migrations, "available", lambda: [m for m in shipped if m[0] < number])
    con = duckdb.connect(str(path))
    migrations.migrate(con)

    def upgrade() -> list[str]:
        monkeypatch.setattr(migrations, "available", lambda: shipped)
        return migrations.migrate(con)

    try:
        yield con, upgrade
    finally:
        con.close()
