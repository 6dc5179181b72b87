"""The charts' numbers, read in the browser and compared with the warehouse.

Charts draw on a canvas, so their values are read from the table folded under each chart
(dashboards/chart_data.py: the frame the chart draws, under the tooltips' titles). What they must equal is
worked out here from the warehouse file (`Shown.db`, read-only) with the series functions the publisher
runs (warehouse/series*.py), not from the read model the page read. Only the rows a grid has in view are in
its accessible table, so each check compares those (the first hours or days of the month).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any

import polars as pl

from dashboards.texts import Texts
from warehouse import open_warehouse
from warehouse.series import queue_wait_daily
from warehouse.series_allocation import allocation_hourly
from warehouse.series_daily import idle_daily, preemptions_daily
from warehouse.series_inference import inference_hourly

TABLES = '[data-testid="stDataFrame"], [data-testid="gsTable"]'  # a long table is a grid, a short one static HTML
NO_VALUE = {"", "None", "null", "<NA>", "NaN"}
READ = "t => [...t.querySelectorAll('tr')].map(r => [...r.querySelectorAll('th,td')].map(c => c.innerText.trim()))"
Key = tuple[str, ...]

if TYPE_CHECKING:
    from tests.browser.figures import Check, Shown


def chart_grids(page: Any, tx: Texts) -> list[list[list[str]]]:
    """Unfold each chart's numbers (top to bottom) and read its grids' rows in view; the first row is the header."""
    folded = page.locator('[data-testid="stExpander"]').filter(has_text=tx("chart.data"))
    return [grid for i in range(folded.count()) for grid in unfold(page, folded.nth(i))]


def unfold(page: Any, expander: Any) -> list[list[list[str]]]:
    """Open the fold `expander` (a locator) and read the rows in view of each table it then holds; the first
    row of each is the header."""
    from tests.browser.browsing import rendered  # browsing imports this module's caller

    expander.locator("summary").first.click()
    frames = expander.locator(TABLES)
    frames.first.wait_for(state="attached", timeout=30_000)  # built by the rerun unfolding asks for...
    rendered(page)  # ...which has sent all of them once it is over
    read = []
    for j in range(frames.count()):
        table = frames.nth(j).locator("table")
        table.wait_for(state="attached", timeout=30_000)
        read.append(table.evaluate(READ))
    return read


def _series(shown: Shown, compute: Callable[[Any], pl.DataFrame]) -> pl.DataFrame:
    assert shown.db is not None, "the warehouse file is needed to check the charts"
    with open_warehouse(shown.db, read_only=True) as wh:
        return compute(wh)


def _local(hour: datetime, zone: str) -> str:
    return str(pl.Series([hour]).dt.replace_time_zone("UTC").dt.convert_time_zone(zone).dt.strftime(
        "%Y-%m-%d %H:00")[0])


def _number(cell: str) -> float:
    return float(cell.replace(",", ""))


def compare(grid: list[list[str]], keys: list[str], value: str, expected: Mapping[Key, float | None],
            tolerance: float) -> int:
    """Every row of `grid` (header first) whose key columns name an expected value shows it within `tolerance`;
    a key the warehouse has no value for shows none (a gap, never 0). Returns the rows compared."""
    header = grid[0]
    assert value in header, (header, value)
    assert all(k in header for k in keys), (header, keys)
    at = [header.index(k) for k in keys]
    checked = 0
    for row in grid[1:]:
        key = tuple(row[i] for i in at)
        cell = row[header.index(value)]
        want = expected.get(key)
        if want is None:
            assert cell in NO_VALUE, (key, cell, "the warehouse has no value here")
        else:
            assert cell not in NO_VALUE, (key, cell, want)
            assert abs(_number(cell) - want) <= tolerance, (key, cell, want)
        checked += 1
    return checked


Row = dict[str, Any]


def _first_chart(page: Any, tx: Texts, rows: pl.DataFrame, spec: tuple[list[str], str, float], *,
                 key: Callable[[Row], Key], value: Callable[[Row], Any]) -> int:
    """The page's first chart's numbers against `rows` of the warehouse's series. `spec`: the grid's columns
    that make a row's key and the column of its value (catalogue keys), and the tolerance (the table's
    rounding); `key` and `value` give them for a row of the series."""
    columns, title, tolerance = spec
    expected: dict[Key, float | None] = {key(r): value(r) for r in rows.iter_rows(named=True)}
    return compare(chart_grids(page, tx)[0], [tx(c) for c in columns], tx(title), expected, tolerance)


def _allocation(page: Any, shown: Shown, tx: Texts) -> int:
    """The first cluster's chart: GPUs reporting per hour."""
    zone = shown.config.timezone
    hourly = _series(shown, lambda wh: allocation_hourly(wh, shown.month.in_zone(zone), shown.config))
    first = hourly.filter(pl.col("cluster") == hourly["cluster"].min())
    label = tx("chart.alloc.reporting")
    return _first_chart(page, tx, first, (["chart.hour", "chart.series"], "chart.gpus", 0.05),
                        key=lambda r: (_local(r["hour"], zone), label), value=lambda r: r["reporting_gpus"])


def _queue_wait(page: Any, shown: Shown, tx: Texts) -> int:
    zone = shown.config.timezone
    daily = _series(shown, lambda wh: queue_wait_daily(wh, shown.month.in_zone(zone)))
    return _first_chart(page, tx, daily, (["col.queue", "chart.day"], "chart.wait_p95_h", 0.005),
                        key=lambda r: (r["queue"], r["day"].isoformat()), value=lambda r: r["wait_p95_s"] / 3600)


def _inference(page: Any, shown: Shown, tx: Texts) -> int:
    zone = shown.config.timezone
    hourly = _series(shown, lambda wh: inference_hourly(wh, shown.month.in_zone(zone)))
    return _first_chart(page, tx, hourly, (["col.service", "chart.hour"], "chart.inference.p95", 0.0005),
                        key=lambda r: (r["service"], _local(r["hour"], zone)), value=lambda r: r["p95_s"])


def _idle_by_day(page: Any, shown: Shown, tx: Texts) -> int:
    zone = shown.config.timezone
    daily = _series(shown, lambda wh: idle_daily(wh, shown.month.in_zone(zone)))
    by_team = daily.group_by("team", "day").agg(pl.col("idle_held_gpu_hours").sum())
    return _first_chart(page, tx, by_team, (["col.team", "chart.day"], "chart.idle_held_h", 0.05),
                        key=lambda r: (str(shown.team_names.get(r["team"], r["team"])), r["day"].isoformat()),
                        value=lambda r: r["idle_held_gpu_hours"])


def _preempted_by_day(page: Any, shown: Shown, tx: Texts) -> int:
    zone = shown.config.timezone
    daily = _series(shown, lambda wh: preemptions_daily(wh, shown.month.in_zone(zone), shown.config))
    by_scenario = daily.filter(pl.col("preempted") > 0).group_by("scenario", "day").agg(pl.col("preempted").sum())
    return _first_chart(page, tx, by_scenario, (["col.scenario", "chart.day"], "chart.preempted", 0.0),
                        key=lambda r: (tx.fmt.term("scenario", r["scenario"]), r["day"].isoformat()),
                        value=lambda r: float(r["preempted"]))


CHART_CHECKS: dict[str, Check] = {
    "overview": _allocation,
    "queues": _queue_wait,
    "inference": _inference,
    "idle": _idle_by_day,
    "preemption": _preempted_by_day,
}


def with_chart(page_name: str, check: Check) -> Check:
    """`check`, then the page's chart check (CHART_CHECKS) when it has one: figures compared by both."""
    chart = CHART_CHECKS.get(page_name)
    if chart is None:
        return check

    def both(page: Any, shown: Shown, tx: Texts) -> int:
        figures = check(page, shown, tx)
        charted = chart(page, shown, tx)
        assert charted > 0, f"{page_name}: no value of its chart was compared with the warehouse"
        return figures + charted

    return both
