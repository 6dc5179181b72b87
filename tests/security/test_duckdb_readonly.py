"""User-facing reads cannot reach the file system through DuckDB.

Dashboards read the published Parquet read model with polars (warehouse.readmodel: no SQL at all)
or, without a service, the warehouse through `open_warehouse(read_only=True)`, whose connection
has external access disabled. Whatever SQL ran on that connection, it could not read or write files.
"""

from __future__ import annotations

from pathlib import Path

import duckdb
import polars as pl
import pytest

from warehouse import open_warehouse


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ro") / "w.duckdb"
    with open_warehouse(path):
        pass
    return path


@pytest.mark.parametrize(
    "statement",
    [
        "SELECT * FROM read_csv('{secret}')",
        "SELECT * FROM read_text('{secret}')",
        "SELECT * FROM read_parquet('{parquet}')",
        "SELECT * FROM '{parquet}'",
        "COPY (SELECT 1) TO '{out}'",
        "ATTACH '{other}' AS other",
        "SET enable_external_access = true",
        "INSTALL httpfs",
        "LOAD httpfs",
        "SELECT * FROM glob('{dir}/*')",
    ],
)
def test_read_only_connection_refuses_file_access(db: Path, tmp_path: Path, statement: str) -> None:
    secret = tmp_path / "secret.csv"
    secret.write_text("token\nhunter2\n", encoding="utf-8")
    parquet = tmp_path / "t.parquet"
    pl.DataFrame({"token": ["hunter2"]}).write_parquet(parquet)
    sql = statement.format(secret=secret, parquet=parquet, out=tmp_path / "out.csv", other=tmp_path / "o.duckdb",
                           dir=tmp_path)
    with open_warehouse(db, read_only=True) as wh, pytest.raises(duckdb.Error):
        wh.query(sql)
    assert not (tmp_path / "out.csv").exists()
    assert not (tmp_path / "o.duckdb").exists()


def test_read_only_connection_still_answers_its_own_queries(db: Path) -> None:
    with open_warehouse(db, read_only=True) as wh:
        assert wh.count("gpu_minutes") == 0
        assert wh.query("SELECT current_setting('enable_external_access') AS v")["v"][0] is False


def test_read_model_module_runs_no_sql() -> None:
    import warehouse.readmodel.load as loading
    from warehouse.readmodel import model

    for module in (loading, model):  # what a reader runs: loading a version, and the model it reads
        source = Path(str(module.__file__)).read_text(encoding="utf-8")
        assert "duckdb" not in source, module.__name__
        assert ".query(" not in source, module.__name__
        assert "warehouse.store" not in source, module.__name__
