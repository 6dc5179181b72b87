"""Golden cases and properties of the online inference evaluator."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sla.inference import OnlineInferenceEvaluator, breach_hours, window_budget_left
from tests.sla.builders import config, inputs, window
from tests.sla.english import english

SLOS = """
[[scenarios.online_inference.slos]]
indicator = "latency_p99"
threshold = "8s"

[[scenarios.online_inference.slos]]
indicator = "error_rate"
threshold = 0.05
"""


def _row(frame: pl.DataFrame, indicator: str, service: str = "chat") -> dict[str, Any]:
    rows = frame.filter((pl.col("indicator") == indicator) & (pl.col("subject") == service))
    assert rows.height == 1, rows
    return rows.row(0, named=True)


def test_month_figures_from_summed_buckets() -> None:
    windows = [
        # Replica a: 100 requests, 50 <= 1s, 40 in (1, 2], 10 in (2, 4]. Two errors.
        window("chat", 5, [50, 90, 100, 100, 100, 100], errors=2),
        # Replica b: 10 slow requests in (8, 16]. Three errors.
        window("chat", 5, [0, 0, 0, 0, 10, 10], errors=3, instance="b"),
    ]
    out = OnlineInferenceEvaluator().evaluate(inputs(windows=windows), config(SLOS))
    p99 = _row(out, "latency_p99")
    # Summed: [50, 90, 100, 100, 110, 110]. Rank 108.9 lies in (8, 16]: 8 + 8 * 8.9 / 10.
    assert p99["value"] == pytest.approx(15.12)
    assert p99["objective"] == 8.0
    assert p99["met"] is False
    # Good events are requests within 8s: 100 of 110 (bucket le=8 holds 100). The target 0.99
    # allows 1% bad, 10 / 110 were: 1 - (10 / 110) / 0.01.
    assert p99["budget_left"] == pytest.approx(1 - (10 / 110) / 0.01)
    assert "90.9% within 8s (target 99.0%" in english(p99["evidence"])
    assert "above 8s in 1 of 1 5-minute windows (100.0%)" in english(p99["evidence"])
    assert _row(out, "latency_p95")["value"] == pytest.approx(11.6)  # rank 104.5: 8 + 8 * 4.5 / 10
    assert _row(out, "latency_p95")["objective"] is None
    assert _row(out, "ttft_p99")["value"] == pytest.approx(15.12)
    err = _row(out, "error_rate")
    assert err["value"] == pytest.approx(5 / 110)
    assert err["met"] is True
    assert err["budget_left"] == pytest.approx(1 - (5 / 110) / 0.05)
    assert err["rows"] == 2
    assert err["subject_kind"] == "service"
    assert err["scenario"] == "online_inference"


def _day(breach_hours_local: set[int], peak_hours_local: set[int], offset_h: int) -> list[dict[str, Any]]:
    """One day of 5-minute windows; traffic is 10x in `peak_hours_local`, p99 breaks in `breach_hours_local`."""
    rows = []
    for slot in range(288):
        local_hour = (slot // 12 + offset_h) % 24
        n = 1000.0 if local_hour in peak_hours_local else 100.0
        slow = n * 0.05 if local_hour in breach_hours_local else 0.0
        fast = n - slow
        rows.append(window("chat", (slot + 1) * 5, [fast, fast, fast, fast, n, n]))
    return rows


def test_breaches_at_peak_hours_say_so() -> None:
    # Asia/Shanghai is UTC+8: local 19:00-21:00 is 11:00-13:00 UTC.
    windows = _day({19, 20}, {19, 20}, offset_h=8)
    cfg = config(SLOS, timezone="Asia/Shanghai")
    out = OnlineInferenceEvaluator().evaluate(inputs(windows=windows), cfg)
    p99 = _row(out, "latency_p99")
    assert "in 24 of 288 5-minute windows (8.3%)" in english(p99["evidence"])
    assert "breaks most at 19:00-21:00 Asia/Shanghai (100.0% of those windows)" in english(p99["evidence"])
    assert "it breaks its latency objective at peak hours" in english(p99["evidence"])
    hours = breach_hours(inputs(windows=windows), cfg)
    p99_hours = hours.filter(pl.col("indicator") == "latency_p99")
    assert p99_hours.filter(pl.col("breached") > 0)["hour"].to_list() == [19, 20]
    assert set(hours["timezone"].to_list()) == {"Asia/Shanghai"}


def test_off_peak_breaches_are_not_called_peak() -> None:
    windows = _day({3}, {19, 20}, offset_h=8)
    out = OnlineInferenceEvaluator().evaluate(inputs(windows=windows), config(SLOS, timezone="Asia/Shanghai"))
    evidence = english(_row(out, "latency_p99")["evidence"])
    assert "breaks most at 03:00-04:00 Asia/Shanghai" in evidence
    assert "peak hours" not in evidence


def test_windows_without_histograms_give_no_latency() -> None:
    row = {**window("chat", 5, [1, 1, 1, 1, 1, 1]), "e2e_le": None, "e2e_counts": None}
    out = OnlineInferenceEvaluator().evaluate(inputs(windows=[row]), config(SLOS))
    p99 = _row(out, "latency_p99")
    assert p99["value"] is None
    assert p99["met"] is None
    assert _row(out, "error_rate")["value"] == 0.0


def test_no_windows_no_rows() -> None:
    assert OnlineInferenceEvaluator().evaluate(inputs(), config(SLOS)).height == 0


def test_window_budget_left() -> None:
    assert window_budget_left(0.0, 0.99) == 1.0
    assert window_budget_left(0.005, 0.99) == pytest.approx(0.5)
    assert window_budget_left(0.0, 1.0) == 1.0
    assert window_budget_left(0.1, 1.0) == 0.0


counts = st.lists(st.integers(0, 200), min_size=6, max_size=6).map(
    lambda xs: [float(sum(xs[: i + 1])) for i in range(len(xs))]
)
windows_strategy = st.lists(
    st.tuples(st.integers(0, 50), counts, st.floats(0.0, 1.0)), min_size=1, max_size=8
).map(lambda ws: [window("chat", 5 * (slot + 1), c, errors=float(round(c[-1] * e))) for slot, c, e in ws])


@settings(max_examples=40, deadline=None)
@given(windows_strategy, st.floats(0.001, 0.5))
def test_budget_left_never_exceeds_one(windows: list[dict[str, Any]], threshold: float) -> None:
    cfg = config(SLOS.replace("threshold = 0.05", f"threshold = {threshold}"))
    out = OnlineInferenceEvaluator().evaluate(inputs(windows=windows), cfg)
    budgets = out["budget_left"].drop_nulls().to_list()
    assert all(b <= 1.0 for b in budgets)


@settings(max_examples=40, deadline=None)
@given(windows_strategy, st.integers(1, 1000), st.integers(0, 50))
def test_only_good_events_never_raise_the_error_rate(windows: list[dict[str, Any]], good: int, slot: int) -> None:
    cfg = config(SLOS)
    before = OnlineInferenceEvaluator().evaluate(inputs(windows=windows), cfg)
    extra = window("chat", 5 * (slot + 1), [float(good)] * 6, errors=0.0, instance="extra")
    after = OnlineInferenceEvaluator().evaluate(inputs(windows=[*windows, extra]), cfg)
    old, new = _row(before, "error_rate")["value"], _row(after, "error_rate")["value"]
    assert new is not None
    if old is not None:
        assert new <= old + 1e-12
        assert _row(after, "error_rate")["budget_left"] >= _row(before, "error_rate")["budget_left"] - 1e-12
