"""SQL quantiles over bucket lists equal the pure reference (Prometheus semantics) exactly."""

from __future__ import annotations

from datetime import timedelta

import numpy as np
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusteward import tables
from gpusteward.domain import Month
from sla.histogram import histogram_quantile
from tests.warehouse.conftest import T0
from warehouse import Warehouse, open_warehouse
from warehouse.quantiles import bucket_scan, window_quantiles

LE = [0.3, 0.5, 1.0, 2.5, 10.0, float("inf")]


def store(wh: Warehouse, counts: list[list[float]]) -> None:
    frame = pl.DataFrame(
        {
            "cluster": "c", "service": "s", "instance": "i",
            "ts": [T0 + timedelta(minutes=5 * (k + 1)) for k in range(len(counts))],
            "window_s": 300, "e2e_le": [LE] * len(counts), "e2e_counts": counts,
        }
    )
    wh.ingest("t", {"inference_windows": tables.conform(frame, tables.INFERENCE_WINDOWS)})


def test_known_windows(wh: Warehouse) -> None:
    store(wh, [[0, 0, 50, 90, 100, 100], [0, 0, 0, 0, 0, 0], [10, 10, 10, 10, 10, 20]])
    out = window_quantiles(wh, Month(2026, 11), (0.5, 0.95))
    # rank 50 lands exactly on the 1.0 bucket's count; rank 95 interpolates inside (2.5, 10].
    assert out["p50"].to_list()[0] == 1.0
    assert out["p95"].to_list()[0] == 2.5 + 7.5 * 5 / 10
    assert out["p50"].to_list()[1] is None  # no observations: no data, never 0
    assert out["p95"].to_list()[2] == 10.0  # only +Inf reaches the rank: the highest finite bound
    assert bucket_scan(wh, Month(2026, 11)) == sum(map(sum, [[0, 0, 50, 90, 100, 100], [10] * 5 + [20]]))


cumulative = st.lists(st.integers(0, 50), min_size=len(LE), max_size=len(LE)).map(
    lambda xs: [float(v) for v in np.cumsum(xs)]
)


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(cumulative, min_size=1, max_size=20), st.sampled_from([0.5, 0.9, 0.95, 0.99]))
def test_sql_equals_the_reference(tmp_path_factory: object, windows: list[list[float]], q: float) -> None:
    path = tmp_path_factory.mktemp("q") / "w.duckdb"  # type: ignore[attr-defined]
    with open_warehouse(path) as wh:
        store(wh, windows)
        got = window_quantiles(wh, Month(2026, 11), (q,))[f"p{round(q * 100)}"].to_list()
    want = histogram_quantile(q, LE, np.array(windows))
    for g, w in zip(got, want, strict=True):
        assert (g is None and np.isnan(w)) or g == pytest.approx(w, rel=1e-12)
