"""Migration 011: a warehouse with GPU-minutes in the old table reads them back through the view."""

from __future__ import annotations

import math
from datetime import timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest

from gpusteward import tables
from tests.warehouse.conftest import T0, gpu_minutes
from warehouse import migrate as migrations
from warehouse import open_warehouse
from warehouse.energy import energy_increases

_PER_GPU = ("cluster", "host", "gpu", "uuid", "model_name", "mig_profile")
_OLD_COLUMNS = [c for c in tables.GPU_MINUTES if c not in _PER_GPU]


def _old_rows() -> pl.DataFrame:
    frame = gpu_minutes("h1", 2, range(6), skip=range(2, 3))
    n = frame.height
    return tables.conform(
        frame.with_columns(
            pl.Series("power_w", [312.4567, 61.94, None, 450.0, 451.26, 99.99, 100.0, 700.06, 65.5, 70.0][:n]),
            pl.Series("gr_engine_active", [0.123456, 0.0, 0.5, None, 0.25, 0.75, 1.0, 0.99996, 0.3, 0.4][:n]),
            pl.Series("temp_c", [float(30 + i) for i in range(n)]),
            pl.Series("energy_mj", [1e9, 1e9 + 6e6, None, 1.2e9, 5e5, 6.5e5 + 0.5, 2e9, 2.1e9, float("nan"), 3e9][:n]),
            pl.Series("xid", [None, 79] + [None] * (n - 2), dtype=pl.Int32),
        ),
        tables.GPU_MINUTES,
    )


def _old_warehouse(path: Path, monkeypatch: pytest.MonkeyPatch) -> pl.DataFrame:
    """A warehouse at migration 010 holding `_old_rows` in the old `gpu_minutes` table, unsorted."""
    shipped = migrations.available()
    monkeypatch.setattr(migrations, "available", lambda: [m for m in shipped if m[0] <= 10])
    rows = _old_rows()
    con = duckdb.connect(str(path))
    try:
        migrations.migrate(con)
        con.execute("INSERT INTO gpus (cluster, host, gpu) VALUES ('east', 'h1', 1), ('east', 'h1', 0)")
        keyed = rows.join(con.sql("SELECT cluster, host, gpu, gpu_key FROM gpus").pl().with_columns(
            pl.col("gpu").cast(pl.Int16), pl.col("gpu_key").cast(pl.Int32)), on=["cluster", "host", "gpu"])
        con.register("_old", keyed.reverse())
        con.execute(f"INSERT INTO gpu_minutes SELECT gpu_key, {', '.join(_OLD_COLUMNS)} FROM _old")
    finally:
        con.close()
    monkeypatch.setattr(migrations, "available", lambda: shipped)
    return rows


def test_old_rows_read_back_identical_up_to_the_stated_resolution(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.duckdb"
    rows = _old_warehouse(path, monkeypatch)
    with open_warehouse(path) as wh:
        assert "011_packed_gpu_minutes.sql" in wh.query("SELECT name FROM schema_migrations")["name"].to_list()
        got = wh.query(
            "SELECT g.cluster, g.host, g.gpu, m.* EXCLUDE (gpu_key) FROM gpu_minutes m JOIN gpus g USING (gpu_key)"
            " ORDER BY g.host, g.gpu, m.ts"
        )
        assert wh.query("SELECT table_type FROM information_schema.tables WHERE table_name = 'gpu_minutes'")[
            "table_type"
        ].to_list() == ["VIEW"]
    want = rows.sort("host", "gpu", "ts")
    for exact in ("ts", "job_id", "gpu_util", "fb_used_mib", "fb_free_mib", "temp_c", "xid"):
        assert got[exact].to_list() == want[exact].to_list(), exact
    quantised = want.select(
        (pl.col("power_w").cast(pl.Float64) * 10).round().truediv(10).cast(pl.Float32),
        (pl.col("gr_engine_active").cast(pl.Float64) * 10_000).round().truediv(10_000).cast(pl.Float32),
    )
    assert got["power_w"].to_list() == quantised["power_w"].to_list()
    assert got["gr_engine_active"].to_list() == quantised["gr_engine_active"].to_list()
    for g, w in zip(got["energy_mj"].to_list(), want["energy_mj"].to_list(), strict=True):
        assert g == w or (g is None and w is None) or (math.isnan(g) and math.isnan(w))


def test_migrated_rows_keep_their_energy_increases_and_are_not_stored_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.duckdb"
    rows = _old_warehouse(path, monkeypatch)
    fresh = tmp_path / "fresh.duckdb"
    with open_warehouse(fresh) as wh:
        wh.ingest("new", {"gpu_minutes": rows})
        want = energy_increases(wh, T0, T0 + timedelta(hours=1))
    with open_warehouse(path) as wh:
        assert energy_increases(wh, T0, T0 + timedelta(hours=1)).equals(want, null_equal=True)
        assert wh.ingest("again", {"gpu_minutes": rows}).stored == {"gpu_minutes": 0}
        assert wh.count("gpu_minutes") == rows.height
