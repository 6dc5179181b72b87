"""Energy increases from the stored counter: resets, gaps, lookback, and a property against a reference."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.warehouse.conftest import T0, gpu_minutes
from warehouse import Warehouse, open_warehouse
from warehouse.energy import energy_increases, energy_kwh_by_job


def _store(wh: Warehouse, counters: Mapping[int, float | None]) -> None:
    """One GPU whose minute m has counter value counters[m] (missing minute: no row)."""
    frame = gpu_minutes("h1", 1, range(max(counters) + 1), skip=range(0))
    frame = frame.filter(pl.col("ts").is_in([T0 + timedelta(minutes=m) for m in counters]))
    values = [counters[int((ts - T0).total_seconds() // 60)] for ts in frame["ts"]]
    wh.ingest("energy", {"gpu_minutes": frame.with_columns(pl.Series("energy_mj", values, pl.Float64))})


def test_increases_resets_and_gaps(wh: Warehouse) -> None:
    # minute 3 is missing (a gap); the counter is reset between minutes 4 and 5; minute 6 has no value
    _store(wh, {0: 1000.0, 1: 1600.0, 2: 2500.0, 4: 4000.0, 5: 300.0, 6: None, 7: 900.0})
    rows = energy_increases(wh, T0, T0 + timedelta(hours=1)).select(
        "energy_increase_mj", "covers_minutes", "counter_reset"
    )
    assert rows.rows() == [
        (None, None, False),  # nothing before the first value
        (600.0, 1, False),
        (900.0, 1, False),
        (1500.0, 2, False),  # minute 4 carries the gap's energy and says so
        (300.0, 1, True),  # after a reset: the energy since the reset
        (600.0, 2, False),  # minute 6 had no counter value
    ]


def test_a_range_starting_late_reads_the_previous_value_within_the_lookback(wh: Warehouse) -> None:
    _store(wh, {0: 100.0, 1: 200.0, 2: 350.0})
    late = energy_increases(wh, T0 + timedelta(minutes=2), T0 + timedelta(hours=1))
    assert late["energy_increase_mj"].to_list() == [150.0]
    short = energy_increases(wh, T0 + timedelta(minutes=2), T0 + timedelta(hours=1), lookback=timedelta(0))
    assert short["energy_increase_mj"].to_list() == [None]


def test_energy_by_job_counts_kwh_and_unknown_minutes(wh: Warehouse) -> None:
    _store(wh, {m: 3.6e9 * m for m in range(4)})  # 1 kWh a minute; the fixture's job 42 holds odd minutes
    by_job = {r["job_id"]: r for r in energy_kwh_by_job(wh, T0, T0 + timedelta(hours=1)).iter_rows(named=True)}
    assert by_job["42"]["energy_kwh"] == 2.0
    assert (by_job[None]["energy_kwh"], by_job[None]["unknown_minutes"]) == (1.0, 1)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.one_of(st.none(), st.floats(0, 1e6)), min_size=1, max_size=30))
def test_increases_match_a_reference_walk(tmp_path_factory: object, values: list[float | None]) -> None:
    counters = {m: v for m, v in enumerate(values) if v is not None}
    if not counters:
        return
    expected: list[float | None] = []
    prev: float | None = None
    for m in sorted(counters):
        v = counters[m]
        expected.append(None if prev is None else (v - prev if v >= prev else v))
        prev = v
    path = tmp_path_factory.mktemp("energy") / "w.duckdb"  # type: ignore[attr-defined]
    with open_warehouse(path) as wh:
        _store(wh, counters)
        got = energy_increases(wh, T0, T0 + timedelta(hours=1))["energy_increase_mj"].to_list()
    assert got == expected
    assert all(g is None or g >= 0 for g in got)
