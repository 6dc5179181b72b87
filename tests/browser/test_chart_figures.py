"""The comparison the browser test makes between a chart's folded numbers and the warehouse
(tests/browser/chart_figures.py), on grids as the browser reads them: no browser needed."""

from __future__ import annotations

import pytest

from tests.browser.chart_figures import compare

GRID = [["Queue", "Day", "Wait p95 (hours)"], ["a/gpu", "2026-10-01", "1.25"], ["a/gpu", "2026-10-02", "None"],
        ["b/gpu", "2026-10-01", "1,024.5"]]
KEYS = ["Queue", "Day"]


def test_rows_equal_to_the_warehouse_pass_and_are_counted() -> None:
    expected: dict[tuple[str, ...], float | None] = {("a/gpu", "2026-10-01"): 1.2512, ("b/gpu", "2026-10-01"): 1024.5}
    assert compare(GRID, KEYS, "Wait p95 (hours)", expected, 0.005) == 3


@pytest.mark.parametrize("expected", [
    {("a/gpu", "2026-10-01"): 1.3, ("b/gpu", "2026-10-01"): 1024.5},  # a value off by more than its rounding
    {("a/gpu", "2026-10-01"): 1.25, ("a/gpu", "2026-10-02"): 0.0, ("b/gpu", "2026-10-01"): 1024.5},  # a gap shown
    {("a/gpu", "2026-10-01"): 1.25},  # a value the warehouse does not have
])
def test_a_wrong_value_a_zero_for_a_gap_or_an_invented_value_fails(
        expected: dict[tuple[str, ...], float | None]) -> None:
    with pytest.raises(AssertionError):
        compare(GRID, KEYS, "Wait p95 (hours)", dict(expected), 0.005)


def test_a_missing_column_fails() -> None:
    with pytest.raises(AssertionError):
        compare(GRID, ["Queue", "Hour"], "Wait p95 (hours)", {}, 0.005)
