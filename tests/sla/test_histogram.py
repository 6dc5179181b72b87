"""histogram_quantile against a plain reference written from promql/quantile.go (bucketQuantile)."""

from __future__ import annotations

import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sla.histogram import histogram_quantile, quantiles_of, summed_histograms

INF = math.inf
VLLM_E2E = [0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, INF]


def reference(q: float, le: list[float], counts: list[float]) -> float:
    """One histogram, one bucket at a time, the way Prometheus does it."""
    if q < 0:
        return -INF
    if q > 1:
        return INF
    if len(le) < 2 or not math.isinf(le[-1]):
        return math.nan
    mono = np.maximum.accumulate(np.asarray(counts, dtype=float))
    observations = mono[-1]
    if observations == 0:
        return math.nan
    rank = q * observations
    b = len(le) - 1
    for i in range(len(le) - 1):
        if mono[i] >= rank:
            b = i
            break
    if b == len(le) - 1:
        return le[-2]
    if b == 0 and le[0] <= 0:
        return le[0]
    start, end, count = 0.0, le[b], mono[b]
    if b > 0:
        start = le[b - 1]
        count -= mono[b - 1]
        rank -= mono[b - 1]
    with np.errstate(invalid="ignore"):  # q = 0 over an empty first bucket: 0/0 is NaN in Go too
        return float(start + (end - start) * (np.float64(rank) / count))


def test_golden_interpolates_inside_the_bucket() -> None:
    # 100 observations: 50 <= 1s, 90 <= 2s, 100 <= 4s. p95: rank 95 lies in (2, 4], 5 of 10 in -> 3.0.
    le = [1.0, 2.0, 4.0, INF]
    counts = [50.0, 90.0, 100.0, 100.0]
    assert histogram_quantile(0.95, le, [counts])[0] == pytest.approx(3.0)
    assert histogram_quantile(0.5, le, [counts])[0] == pytest.approx(1.0)
    # p25 lies in the first bucket, whose lower bound is 0: 25 of 50 -> 0.5.
    assert histogram_quantile(0.25, le, [counts])[0] == pytest.approx(0.5)


def test_golden_inf_bucket_returns_highest_finite_bound() -> None:
    le = [1.0, 2.0, INF]
    counts = [10.0, 20.0, 100.0]  # 80 observations above 2s
    assert histogram_quantile(0.99, le, [counts])[0] == 2.0


def test_no_observations_is_nan_never_zero() -> None:
    assert math.isnan(histogram_quantile(0.99, [1.0, INF], [[0.0, 0.0]])[0])


def test_without_inf_bucket_is_nan_as_in_prometheus() -> None:
    assert math.isnan(histogram_quantile(0.5, [1.0, 2.0], [[1.0, 2.0]])[0])


def test_non_monotonic_counts_are_forced_monotonic() -> None:
    le = [1.0, 2.0, 4.0, INF]
    bumpy = [50.0, 40.0, 100.0, 100.0]
    assert histogram_quantile(0.6, le, [bumpy])[0] == pytest.approx(reference(0.6, le, bumpy))


def test_quantile_outside_0_1() -> None:
    assert histogram_quantile(-0.1, [1.0, INF], [[1.0, 1.0]])[0] == -INF
    assert histogram_quantile(1.1, [1.0, INF], [[1.0, 1.0]])[0] == INF


@st.composite
def histograms(draw: st.DrawFn) -> tuple[list[float], list[list[float]]]:
    bounds = sorted(set(draw(st.lists(st.floats(-5, 100, allow_nan=False), min_size=1, max_size=8))))
    le = [*bounds, INF]
    rows = draw(st.lists(
        st.lists(st.integers(0, 50), min_size=len(le), max_size=len(le))
        .map(lambda xs: list(np.cumsum(xs, dtype=float))),
        min_size=1, max_size=5,
    ))
    return le, rows


@settings(max_examples=200, deadline=None)
@given(histograms(), st.floats(0.0, 1.0))
def test_equals_numpy_reference(hist: tuple[list[float], list[list[float]]], q: float) -> None:
    le, rows = hist
    got = histogram_quantile(q, le, rows)
    want = [reference(q, le, r) for r in rows]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True)


def test_summed_histograms_add_bucket_increases_per_key() -> None:
    frame = pl.DataFrame({
        "service": ["a", "a", "b"],
        "le": [[*VLLM_E2E[:3], INF]] * 3,
        "counts": [[1.0, 2.0, 3.0, 4.0], [1.0, 1.0, 1.0, 2.0], [0.0, 0.0, 0.0, 0.0]],
    })
    summed = summed_histograms(frame, ["service"], "le", "counts")
    assert summed.filter(pl.col("service") == "a")["counts"].to_list() == [[2.0, 3.0, 4.0, 6.0]]
    out = quantiles_of(summed, {"p50": 0.5})
    # a: rank 3 of 6 lies in (0.3, 0.5], 1 of 1 -> 0.5; b has no observations -> null, not 0.
    assert out["p50"].to_list() == [pytest.approx(0.5), None]
