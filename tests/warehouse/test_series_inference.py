"""Latency p95/p99 and request rate per service and local hour, checked against a hand count and, drawn at
random, against a recount in plain Python (zoneinfo for the hours, Prometheus' histogram_quantile on the
hour's summed buckets) whose hours add up to the month's requests."""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusteward import tables
from gpusteward.domain import Month
from sla.histogram import histogram_quantile
from warehouse import Warehouse
from warehouse.series_inference import inference_hourly

LE = [0.1, 0.5, 1.0, math.inf]


def _windows(rows: list[tuple[str, str, datetime, float, list[float]]]) -> pl.DataFrame:
    """(service, instance, window end, requests, cumulative bucket counts) -> INFERENCE_WINDOWS rows."""
    return tables.conform(pl.DataFrame([
        {"cluster": "east", "service": s, "instance": i, "ts": ts, "window_s": 300, "requests": r, "errors": 0.0,
         "e2e_le": LE, "e2e_counts": counts}
        for s, i, ts, r, counts in rows
    ], schema_overrides={"ts": pl.Datetime("us")}), tables.INFERENCE_WINDOWS)


def test_an_hour_sums_its_replicas_and_windows_before_the_quantile(wh: Warehouse) -> None:
    t0 = datetime(2026, 11, 1)
    wh.ingest("test", {"inference_windows": _windows([
        ("chat", "r1", t0, 99.0, [99, 99, 99, 99]),  # ends at midnight: October's last window
        ("chat", "r1", t0 + timedelta(minutes=5), 20.0, [10, 18, 20, 20]),
        ("chat", "r2", t0 + timedelta(minutes=5), 10.0, [0, 0, 10, 10]),
        ("chat", "r1", t0 + timedelta(hours=1), 6.0, [6, 6, 6, 6]),  # ends 01:00: the slot 00:55, hour 00:00
        # 01:00-02:00: no window (no row); 02:00-03:00: windows without a request (latency unknown)
        ("chat", "r1", t0 + timedelta(hours=2, minutes=10), 0.0, [0, 0, 0, 0]),
    ])})
    got = inference_hourly(wh, Month(2026, 11)).to_dicts()
    assert [(r["hour"], r["service"], r["slots"], r["requests"]) for r in got] == [
        (t0, "chat", 2, 36.0), (t0 + timedelta(hours=2), "chat", 1, 0.0)]
    # summed buckets [16, 24, 36, 36]: rank 0.95 * 36 = 34.2 lies in (0.5, 1.0], 10.2 of its 12
    assert got[0]["p95_s"] == pytest.approx(0.5 + 0.5 * 10.2 / 12)
    assert got[0]["p99_s"] == pytest.approx(0.5 + 0.5 * (0.99 * 36 - 24) / 12)
    assert got[0]["rps"] == pytest.approx(36 / 3600)
    assert (got[1]["p95_s"], got[1]["p99_s"], got[1]["observations"]) == (None, None, 0.0)


def _local_hour(ts: datetime, zone: str) -> datetime:
    local = ts.replace(tzinfo=UTC).astimezone(ZoneInfo(zone))
    return ts - timedelta(minutes=local.minute)  # in UTC: aware arithmetic would lose a repeated hour's fold


_STARTS = {"Asia/Kolkata": datetime(2026, 10, 31, 18, 30), "UTC": datetime(2026, 11, 1)}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(_STARTS)), st.dictionaries(
    st.tuples(st.sampled_from(["a", "b"]), st.sampled_from(["r1", "r2"]), st.integers(-3, 50)),  # 5-minute steps
    st.tuples(st.integers(0, 5), st.integers(0, 5), st.integers(0, 5)),  # observations per bucket (<=0.1, 0.5, 1)
    min_size=1, max_size=40,
))
def test_matches_a_recount(wh: Warehouse, zone: str, draws: dict[tuple[str, str, int], tuple[int, int, int]]) -> None:
    start, month = _STARTS[zone], Month(2026, 11, zone)
    wh.connection.execute("DELETE FROM inference_windows")
    rows = []
    for (service, instance, step), (a, b, c) in sorted(draws.items()):
        counts = [float(a), float(a + b), float(a + b + c), float(a + b + c)]
        rows.append((service, instance, start + timedelta(minutes=5 * step), counts[-1], counts))
    wh.ingest("drawn", {"inference_windows": _windows(rows)})
    got = inference_hourly(wh, month)

    sums: dict[tuple[str, datetime], np.ndarray] = defaultdict(lambda: np.zeros(len(LE)))
    slots: dict[tuple[str, datetime], set[datetime]] = defaultdict(set)
    end = month.end.replace(tzinfo=None)
    for service, _instance, ts, _requests, counts in rows:
        if not start < ts <= end:  # a window belongs to the month it ends in, after its first instant
            continue
        key = (service, _local_hour(ts - timedelta(minutes=5), zone))
        sums[key] += np.asarray(counts)
        slots[key].add(ts)
    assert list(zip(got["service"], got["hour"], strict=True)) == sorted(sums)
    for row in got.iter_rows(named=True):
        summed = sums[(row["service"], row["hour"])]
        assert row["requests"] == summed[-1]
        assert row["slots"] == len(slots[(row["service"], row["hour"])])
        for column, q in (("p95_s", 0.95), ("p99_s", 0.99)):
            expected = float(histogram_quantile(q, LE, summed)[0])
            assert row[column] == (None if math.isnan(expected) else pytest.approx(expected))
    in_month = sum(r[3] for r in rows if start < r[2] <= end)
    assert got["requests"].sum() == in_month  # the hours hold every request of the month, once
