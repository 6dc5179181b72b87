"""The packed GPU-minute layout (migration 011): what readers see through the `gpu_minutes` view."""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import timedelta

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusteward import tables
from tests.warehouse.conftest import T0, gpu_minutes
from warehouse import Warehouse, open_warehouse
from warehouse.energy import energy_increases

VIEW_COLUMNS = [
    ("gpu_key", "INTEGER"), ("ts", "TIMESTAMP"), ("job_id", "VARCHAR"), ("gpu_util", "FLOAT"),
    ("gr_engine_active", "FLOAT"), ("fb_used_mib", "FLOAT"), ("fb_free_mib", "FLOAT"), ("power_w", "FLOAT"),
    ("temp_c", "FLOAT"), ("energy_mj", "DOUBLE"), ("xid", "INTEGER"),
]


def _stored(wh: Warehouse) -> pl.DataFrame:
    return wh.query(
        "SELECT g.host, g.gpu, m.* EXCLUDE (gpu_key) FROM gpu_minutes m JOIN gpus g USING (gpu_key)"
        " ORDER BY g.host, g.gpu, m.ts"
    )


def _with(frame: pl.DataFrame, **columns: Sequence[object]) -> pl.DataFrame:
    return tables.conform(frame.with_columns(**{k: pl.Series(k, v) for k, v in columns.items()}), tables.GPU_MINUTES)


def test_the_view_has_the_old_tables_columns_and_types(wh: Warehouse) -> None:
    described = wh.query("DESCRIBE gpu_minutes").select("column_name", "column_type").rows()
    assert described == VIEW_COLUMNS


def test_values_come_back_exact_or_at_the_stated_resolution(wh: Warehouse) -> None:
    frame = _with(
        gpu_minutes("h1", 1, range(4)),
        gpu_util=[97.5, 0.0, 12.25, None],
        gr_engine_active=[0.123456, 0.0, 1.0, 0.99996],
        power_w=[312.4567, 61.94, 700.06, None],
        temp_c=[71.0, 34.5, 80.0, 30.0],
        fb_used_mib=[60000.0, 0.0, 81559.0, 1.5],
        fb_free_mib=[21559.0, 81559.0, 0.0, 81557.5],
        energy_mj=[1.5e9, 1.5e9 + 0.25, float("nan"), 2.0**60],
        xid=[None, 79, None, 13],
    )
    wh.ingest("a", {"gpu_minutes": frame})
    got = _stored(wh)
    assert got["ts"].to_list() == frame["ts"].to_list()
    assert got["job_id"].to_list() == frame["job_id"].to_list()
    for exact in ("gpu_util", "temp_c", "fb_used_mib", "fb_free_mib", "xid"):
        assert got[exact].to_list() == frame[exact].to_list(), exact
    assert got["gr_engine_active"].to_list() == pl.Series([0.1235, 0.0, 1.0, 1.0], dtype=pl.Float32).to_list()
    assert got["power_w"].to_list() == pl.Series([312.5, 61.9, 700.1, None], dtype=pl.Float32).to_list()
    energy = got["energy_mj"].to_list()
    assert energy[:2] == [1.5e9, 1.5e9 + 0.25]
    assert math.isnan(energy[2])
    assert energy[3] == 2.0**60


@settings(max_examples=30, deadline=None)
@given(
    st.lists(st.integers(0, 20_000), min_size=6, max_size=6),
    st.lists(st.integers(0, 10_000), min_size=6, max_size=6),
)
def test_values_on_the_grid_come_back_unchanged(
    tmp_path_factory: pytest.TempPathFactory, deciwatts: list[int], ratio_e4: list[int]
) -> None:
    frame = _with(
        gpu_minutes("h1", 2, range(3)),
        power_w=[d / 10 for d in deciwatts],
        gr_engine_active=[r / 10_000 for r in ratio_e4],
    )
    with open_warehouse(tmp_path_factory.mktemp("grid") / "w.duckdb") as wh:
        wh.ingest("a", {"gpu_minutes": frame})
        got = _stored(wh)
    assert got["power_w"].to_list() == frame["power_w"].to_list()
    assert got["gr_engine_active"].to_list() == frame["gr_engine_active"].to_list()


def _both_nan(a: float | None, b: float | None) -> bool:
    return a is not None and b is not None and math.isnan(a) and math.isnan(b)


counters = st.one_of(
    st.none(),
    st.integers(0, 2**52).map(float),
    st.floats(0, 1e12),
    st.floats(allow_nan=True, allow_infinity=True),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(counters, min_size=9, max_size=9), st.integers(0, 8))
def test_the_energy_counter_is_stored_without_loss(
    tmp_path_factory: pytest.TempPathFactory, values: list[float | None], split: int
) -> None:
    frame = _with(gpu_minutes("h1", 3, range(3)), energy_mj=values)  # three GPUs: forwards, backwards, forwards
    with open_warehouse(tmp_path_factory.mktemp("energy") / "w.duckdb") as wh:
        wh.ingest("a", {"gpu_minutes": frame[split:]})
        wh.ingest("b", {"gpu_minutes": frame[:split]})  # earlier rows after later ones
        got = _stored(wh)["energy_mj"].to_list()
    expected = frame["energy_mj"].to_list()
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g == e or _both_nan(g, e)


def test_a_backfill_into_an_earlier_gap_changes_no_increase(tmp_path_factory: pytest.TempPathFactory) -> None:
    def frame(minutes: range) -> pl.DataFrame:
        base = gpu_minutes("h1", 2, minutes)
        counter = [
            3_000_000.0 * m + 1e9 * g if m < 40 else 500_000.0 * (m - 40) for g, m in zip(base["gpu"], [
                int((t - T0).total_seconds() // 60) for t in base["ts"]
            ], strict=True)
        ]
        return _with(base, energy_mj=counter)

    whole = frame(range(60))
    results = []
    for order in ([range(60)], [range(30, 60), range(30), range(10, 50)]):
        with open_warehouse(tmp_path_factory.mktemp("fill") / "w.duckdb") as wh:
            for minutes in order:
                wh.ingest("part", {"gpu_minutes": whole.filter(
                    pl.col("ts").is_between(T0 + timedelta(minutes=minutes.start),
                                            T0 + timedelta(minutes=minutes.stop - 1)))})
            assert wh.count("gpu_minutes") == 120
            results.append(energy_increases(wh, T0, T0 + timedelta(hours=1)))
    assert results[0].equals(results[1])
    assert results[0]["counter_reset"].sum() == 2  # minute 40 on each GPU


def test_rows_are_stored_alternately_forwards_and_backwards(wh: Warehouse) -> None:
    wh.ingest("day", {"gpu_minutes": gpu_minutes("h1", 4, range(50))})
    minutes = wh.query("SELECT minute FROM gpu_minute_rows ORDER BY rowid")["minute"]
    assert set(minutes.diff().drop_nulls().to_list()) == {-1, 0, 1}


def test_job_ids_get_one_key_across_batches(wh: Warehouse) -> None:
    wh.ingest("a", {"gpu_minutes": gpu_minutes("h1", 2, range(10))})
    wh.ingest("b", {"gpu_minutes": gpu_minutes("h2", 2, range(10))})
    assert wh.query("SELECT job_id FROM job_labels")["job_id"].to_list() == ["42"]
    assert wh.query("SELECT count(*) AS n FROM gpu_minutes WHERE job_id = '42'")["n"][0] == 20


def test_a_timestamp_inside_a_minute_is_refused(wh: Warehouse) -> None:
    frame = gpu_minutes("h1", 1, range(3)).with_columns(pl.col("ts") + timedelta(seconds=30))
    with pytest.raises(ValueError, match="start of a minute"):
        wh.ingest("a", {"gpu_minutes": frame})
    assert wh.count("gpu_minutes") == 0
