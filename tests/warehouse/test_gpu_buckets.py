"""Each GPU's 5-minute buckets, computed in DuckDB from the packed minute rows, against a recomputation from
the raw minute rows in polars: golden values on a hand-built warehouse, and properties (a bucket or an hour
without telemetry is never zero; merged means are weighted by their minutes)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusteward import tables
from warehouse import Warehouse, open_warehouse
from warehouse.gpu_buckets import BUCKET_MINUTES, GPU_BUCKETS, coarsen, day_fingerprints, gpu_buckets, gpu_inventory

T0 = datetime(2026, 10, 1)
DAY = (T0, T0 + timedelta(days=1))


def minutes(rows: Sequence[tuple[str, int, int, str | None, float | None, float | None, float | None]]
            ) -> pl.DataFrame:
    """(host, gpu, minute after T0, job, engine 0..1, memory MiB, power W) -> GPU_MINUTES on cluster east."""
    return tables.conform(pl.DataFrame({
        "cluster": ["east"] * len(rows),
        "host": [r[0] for r in rows],
        "gpu": [r[1] for r in rows],
        "uuid": [f"GPU-{r[0]}-{r[1]}" for r in rows],
        "model_name": ["H100"] * len(rows),
        "ts": [T0 + timedelta(minutes=r[2]) for r in rows],
        "job_id": [r[3] for r in rows],
        "gr_engine_active": [r[4] for r in rows],
        "fb_used_mib": [r[5] for r in rows],
        "power_w": [r[6] for r in rows],
    }, schema_overrides={"gr_engine_active": pl.Float32, "fb_used_mib": pl.Float32, "power_w": pl.Float32}),
        tables.GPU_MINUTES)


def reference(raw: pl.DataFrame) -> pl.DataFrame:
    """GPU_BUCKETS from raw minute rows, written independently of the SQL: group, count present values, mean."""
    out = (
        raw.with_columns(pl.col("ts").dt.truncate(f"{BUCKET_MINUTES}m").alias("bucket"))
        .group_by("cluster", "host", "gpu", "bucket", "job_id")
        .agg(
            pl.len().alias("minutes"),
            pl.col("gr_engine_active").count().alias("engine_minutes"),
            pl.col("gr_engine_active").cast(pl.Float64).mean().alias("engine_mean"),
            pl.col("fb_used_mib").count().alias("memory_minutes"),
            pl.col("fb_used_mib").cast(pl.Float64).mean().alias("memory_mean_mib"),
            pl.col("power_w").count().alias("power_minutes"),
            pl.col("power_w").cast(pl.Float64).mean().alias("power_mean_w"),
        )
    )
    return tables.conform(out, GPU_BUCKETS).sort("cluster", "host", "gpu", "bucket", "job_id", nulls_last=False)


def stored(wh: Warehouse) -> pl.DataFrame:
    """The minute rows as the warehouse gives them back (through its view, so packing rounds them the same)."""
    raw = wh.query(
        "SELECT g.cluster, g.host, g.gpu, m.* EXCLUDE (gpu_key) FROM gpu_minutes m JOIN gpus g USING (gpu_key)"
    )
    return tables.conform(raw, tables.GPU_MINUTES)


def assert_same(got: pl.DataFrame, want: pl.DataFrame) -> None:
    assert got.select(pl.exclude("engine_mean", "memory_mean_mib", "power_mean_w")).equals(
        want.select(pl.exclude("engine_mean", "memory_mean_mib", "power_mean_w")))
    for column in ("engine_mean", "memory_mean_mib", "power_mean_w"):
        assert (got[column].is_null() == want[column].is_null()).all(), column
        worst = (got[column] - want[column]).abs().fill_null(0.0).max()
        assert worst is None or (isinstance(worst, float) and worst < 1e-6), (column, worst)


GOLDEN = [
    # n1/0: minutes 0-4 one job, engine 0.5 then 1.0 on three; minute 2 without engine activity
    ("n1", 0, 0, "7", 0.5, 1000.0, 300.0),
    ("n1", 0, 1, "7", 1.0, 2000.0, 310.0),
    ("n1", 0, 2, "7", None, 3000.0, None),
    ("n1", 0, 3, "7", 1.0, 4000.0, 320.0),
    ("n1", 0, 4, "7", 0.0, 5000.0, 330.0),
    # minutes 5-9: the job ends at 7, job 8 starts at 8; minute 9 missing (no row)
    ("n1", 0, 5, "7", 0.25, 100.0, 200.0),
    ("n1", 0, 6, "7", 0.25, 100.0, 200.0),
    ("n1", 0, 8, "8", 0.75, 500.0, 400.0),
    # n1/1: one minute, no job, exactly zero activity: zero, which is data
    ("n1", 1, 61, None, 0.0, 0.0, 60.0),
]


def test_golden_buckets(wh: Warehouse) -> None:
    wh.ingest("golden", {"gpu_minutes": minutes(GOLDEN)})
    got = gpu_buckets(wh, *DAY)
    rows = got.select("host", "gpu", "bucket", "job_id", "minutes", "engine_minutes", "engine_mean",
                      "memory_mean_mib", "power_minutes", "power_mean_w").rows()
    assert rows == [
        ("n1", 0, T0, "7", 5, 4, pytest.approx(0.625), 3000.0, 4, pytest.approx(315.0)),
        ("n1", 0, T0 + timedelta(minutes=5), "7", 2, 2, 0.25, 100.0, 2, 200.0),
        ("n1", 0, T0 + timedelta(minutes=5), "8", 1, 1, 0.75, 500.0, 1, 400.0),
        ("n1", 1, T0 + timedelta(minutes=60), None, 1, 1, 0.0, 0.0, 1, 60.0),
    ]
    assert_same(got, reference(stored(wh)))
    assert gpu_inventory(wh).select("host", "gpu").rows() == [("n1", 0), ("n1", 1)]


def test_hours_weight_each_bucket_by_its_minutes_and_leave_no_data_null(wh: Warehouse) -> None:
    wh.ingest("golden", {"gpu_minutes": minutes(GOLDEN)})
    hourly = coarsen(gpu_buckets(wh, *DAY), "1h")
    first = hourly.filter((pl.col("gpu") == 0) & (pl.col("bucket") == T0)).row(0, named=True)
    # (0.5 + 1 + 1 + 0 + 0.25 + 0.25 + 0.75) / 7 minutes with engine activity: not the mean of bucket means
    assert first["engine_mean"] == pytest.approx(3.75 / 7)
    assert (first["minutes"], first["engine_minutes"]) == (8, 7)
    # GPU 1 has no row in the first hour: no cell at all, which the heatmap draws as no data (never 0)
    assert hourly.filter((pl.col("gpu") == 1) & (pl.col("bucket") == T0)).is_empty()
    assert hourly.filter(pl.col("gpu") == 1)["engine_mean"].to_list() == [0.0]


def test_a_day_fingerprint_changes_only_when_its_rows_do(wh: Warehouse) -> None:
    wh.ingest("one", {"gpu_minutes": minutes(GOLDEN)})
    wh.ingest("two", {"gpu_minutes": minutes([("n2", 0, 24 * 60 + 5, None, 0.1, 1.0, 1.0)])})
    before = day_fingerprints(wh)
    assert sorted(before) == [T0.date(), (T0 + timedelta(days=1)).date()]
    wh.ingest("again", {"gpu_minutes": minutes(GOLDEN)})  # stored already: nothing new
    assert day_fingerprints(wh) == before
    wh.ingest("late", {"gpu_minutes": minutes([("n2", 0, 30, None, 0.2, 1.0, 1.0)])})
    after = day_fingerprints(wh)
    assert after[T0.date()] != before[T0.date()]
    assert after[(T0 + timedelta(days=1)).date()] == before[(T0 + timedelta(days=1)).date()]


VALUE = st.one_of(st.none(), st.floats(0.0, 1.0, allow_nan=False, width=32))
MINUTE_ROWS = st.lists(
    st.tuples(st.sampled_from(["a", "b"]), st.integers(0, 1), st.integers(0, 179), st.sampled_from([None, "1", "2"]),
              VALUE, st.one_of(st.none(), st.floats(0, 80000, width=32)),
              st.one_of(st.none(), st.floats(0, 700, width=32))),
    min_size=1, max_size=80, unique_by=lambda r: (r[0], r[1], r[2]),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=MINUTE_ROWS)
def test_buckets_and_hours_equal_the_minute_rows(rows: list[tuple[str, int, int, str | None, float | None,
                                                                   float | None, float | None]]) -> None:
    with open_warehouse(":memory:") as wh:
        wh.ingest("generated", {"gpu_minutes": minutes(rows)})
        raw = stored(wh)
        buckets = gpu_buckets(wh, *DAY)
        assert_same(buckets, reference(raw))
        hourly = coarsen(buckets, "1h")
        want = (
            raw.with_columns(pl.col("ts").dt.truncate("1h").alias("bucket"))
            .group_by("host", "gpu", "bucket")
            .agg(pl.col("gr_engine_active").cast(pl.Float64).mean().alias("mean"),
                 pl.col("gr_engine_active").count().alias("n"))
        )
        got = hourly.join(want, on=["host", "gpu", "bucket"], how="full", coalesce=True)
        assert got.filter(pl.col("minutes").is_null()).is_empty()  # every hour with rows has a cell, and only those
        for r in got.iter_rows(named=True):
            assert r["engine_minutes"] == r["n"]
            if r["n"] == 0:
                assert r["engine_mean"] is None  # no engine activity measured: null, never 0
            else:
                assert r["engine_mean"] == pytest.approx(r["mean"], abs=1e-6)
