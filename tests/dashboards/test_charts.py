"""The month's series charts: the frames drawn (gaps where the warehouse had no row, objectives from the
month's results and the config), the Vega-Lite specs with their titles in both languages, and where each
page puts its chart (before its tables)."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import date, datetime
from pathlib import Path
from typing import Any

import polars as pl
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from dashboards.app import SCREENS
from dashboards.chart_data import chart_tables
from dashboards.charts import month_hours
from dashboards.charts_allocation import allocation_chart, allocation_frames
from dashboards.charts_daily import (
    idle_chart,
    idle_frame,
    idle_objective_chart,
    idle_objective_frame,
    preemption_chart,
    preemption_frames,
)
from dashboards.charts_inference import inference_chart, inference_frame
from dashboards.texts import Texts
from dashboards.view import Filters, View, filter_outputs
from gpusteward.config.protection import PreemptionRatioLine
from gpusteward.config.schema import ClusterConfig, Config
from gpusteward.domain import Month
from reports.locale import Lang
from tests.dashboards.sample import AS_OF, sample_model
from tests.reports.fixtures import MONTH, demo_config

HERE = Path(__file__).parent


def _config() -> Config:
    config = replace(demo_config(), clusters=[ClusterConfig(name="east", gpus=32), ClusterConfig(name="west", gpus=32)])
    lines = [PreemptionRatioLine(cluster="east", max_ratio=0.2, min_records=10)]
    return replace(config, protection=replace(config.protection, training_preemption=lines))


NO_FILTERS = Filters()


def _view(lang: Lang = "en", filters: Filters = NO_FILTERS, config: Config | None = None) -> View:
    model = sample_model()
    return View(model, MONTH, filter_outputs(model.month_outputs(MONTH), filters), filters, lang,
                config or _config(), AS_OF)


def test_month_hours_are_real_hours_labelled_on_the_pools_clock() -> None:
    fall_back = month_hours(Month(2026, 11), "America/New_York")  # clocks go back on 1 November
    assert fall_back.height == 30 * 24 + 1
    assert fall_back["hour"][0] == datetime(2026, 11, 1, 4)
    locals_ = fall_back["local"].to_list()
    assert locals_[:4] == [datetime(2026, 11, 1, h) for h in (0, 1, 1, 2)]  # 01:00 twice, both kept
    kolkata = month_hours(Month(2026, 11), "Asia/Kolkata")
    assert kolkata["hour"][0] == datetime(2026, 10, 31, 18, 30)
    assert kolkata["local"][0] == datetime(2026, 11, 1)


def _points(frame: Any, series: str, cluster: str = "east") -> dict[int, float | None]:
    rows = frame.filter((frame["series"] == series) & (frame["cluster"] == cluster))
    first = rows.filter((rows["local"].dt.day() == 1) & (rows["local"].dt.hour() < 4))
    return {r["local"].hour: r["gpus"] for r in first.iter_rows(named=True)}


def test_allocation_hours_without_data_are_gaps_and_the_reserve_is_drawn() -> None:
    frames = allocation_frames(_view())
    assert frames is not None
    assert frames.gpus.filter(frames.gpus["cluster"] == "east").height == 3 * 30 * 24  # every hour, three series
    assert _points(frames.gpus, "allocated") == {0: 24.0, 1: 26.0, 2: None, 3: 20.0}  # 02:00: no row, no zero
    assert _points(frames.gpus, "other") == {0: 18.0, 1: 18.0, 2: None, 3: 16.0}  # allocated - inference
    assert _points(frames.gpus, "other", "west") == {}  # no reserve in west: other work is not singled out
    assert frames.limits.select("cluster", "limit", "gpus").rows() == [
        ("east", "capacity", 32.0), ("east", "reserve", 20.0), ("west", "capacity", 32.0)]
    util = {(r["cluster"], r["local"].hour): (r["util_pct"], r["engine_pct"]) for r in frames.util.iter_rows(named=True)
            if r["local"].day == 1 and r["local"].hour < 4}
    assert util[("east", 3)] == pytest.approx((30.0, 50.0))
    assert util[("east", 2)] == (None, None)
    assert util[("west", 0)] == (None, None)
    assert allocation_frames(_view(filters=Filters(teams=("vision",)))) is None  # clusters are shared
    west = allocation_frames(_view(filters=Filters(clusters=("west",))))
    assert west is not None
    assert set(west.gpus["cluster"]) == {"west"}


def _spec(chart: Any) -> dict[str, Any]:
    spec: dict[str, Any] = chart.to_dict()
    return spec


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_allocation_chart_breaks_its_lines_at_gaps(lang: Lang) -> None:
    tx = Texts(lang)
    frames = allocation_frames(_view(lang))
    assert frames is not None
    spec = _spec(allocation_chart(frames, "east", tx))
    top, bottom = spec["vconcat"]
    assert top["title"] == tx("chart.alloc.title", cluster="east")
    line, rule = top["layer"]
    assert line["mark"] == {"type": "line", "invalid": "break-paths-show-domains"}
    assert line["encoding"]["y"]["title"] == tx("chart.gpus")
    assert rule["mark"]["type"] == "rule"
    assert bottom["encoding"]["y"]["title"] == tx("chart.util_axis")  # short enough for the 140 px panel
    assert tx("chart.util_pct") in [t["title"] for t in bottom["encoding"]["tooltip"]]  # the whole name here
    labels = set(frames.gpus["label"]) | set(frames.limits["label"])
    assert {tx("chart.alloc.reserve", n=12), tx("chart.alloc.capacity")} <= labels


def test_inference_draws_the_evaluators_services_against_their_objectives() -> None:
    found = inference_frame(_view())
    assert found is not None
    hours, objectives = found
    assert set(hours["service"]) == {"chat-70b", "embed-small"}  # ghost has no result: not drawn
    chat = {r["local"].hour: (r["p95_s"], r["p99_s"], r["rps"]) for r in hours.iter_rows(named=True)
            if r["service"] == "chat-70b" and r["local"].day == 1 and r["local"].hour < 3}
    assert chat == {0: (4.0, 9.5, 12.5), 1: (3.0, 7.0, 10.0), 2: (None, None, None)}
    # latency_p99 has an objective for both; latency_p95 and throughput none: nothing drawn there
    assert objectives.rows() == [("chat-70b", "p99", 8.0), ("embed-small", "p99", 8.0)]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_inference_chart_has_three_panels_with_their_rules(lang: Lang) -> None:
    tx = Texts(lang)
    found = inference_frame(_view(lang))
    assert found is not None
    panels = _spec(inference_chart(*found, tx))["vconcat"]
    assert [p["title"] for p in panels] == [tx("chart.inference.p95"), tx("chart.inference.p99"),
                                            tx("chart.inference.rps")]
    assert [len(p["layer"]) for p in panels] == [1, 2, 1]  # a rule only where an objective exists


def test_idle_days_by_team_and_the_team_filter() -> None:
    frame = idle_frame(_view())
    assert frame is not None
    assert frame.select("day", "team_name", "idle_held_gpu_hours").rows() == [
        (date(2026, 11, 1), "NLP", 0.5), (date(2026, 11, 1), "Research", 40.0), (date(2026, 11, 1), "Vision", 3.0),
        (date(2026, 11, 2), "Vision", 2.0), (date(2026, 11, 3), "Research", 30.0)]
    only = idle_frame(_view(filters=Filters(teams=("nlp",))))
    assert only is not None
    assert set(only["team"]) == {"nlp"}
    spec = _spec(idle_chart(frame, Texts("zh")))
    assert spec["encoding"]["y"]["title"] == Texts("zh")("chart.idle_held_h")


def test_interactive_idle_runs_up_to_the_teams_monthly_objective() -> None:
    frame = idle_objective_frame(_view())
    assert frame is not None
    # research alone has an idle_gpu_hours objective; the total runs to the last day with data (3 Nov)
    assert frame.select("day", "team", "to_date", "objective").rows() == [
        (date(2026, 11, 1), "research", 60.0, 100.0), (date(2026, 11, 2), "research", 60.0, 100.0),
        (date(2026, 11, 3), "research", 100.0, 100.0)]
    spec = _spec(idle_objective_chart(frame, Texts("zh")))
    assert [layer["mark"]["type"] for layer in spec["layer"]] == ["line", "rule"]
    assert spec["title"] == Texts("zh")("chart.idle_to_date_h")
    assert idle_objective_frame(_view(filters=Filters(teams=("vision",)))) is None  # vision has no objective


def test_preemptions_by_scenario_and_the_training_ratio_against_its_line() -> None:
    found = preemption_frames(_view())
    assert found is not None
    counts, ratios = found
    assert counts.select("day", "scenario", "preempted").rows() == [
        (date(2026, 11, 1), "interactive", 1), (date(2026, 11, 1), "training", 3), (date(2026, 11, 3), "training", 2)]
    assert ratios.height == 30  # every day of November, for east's line
    by_day = {r["day"].day: (r["ended"], r["ratio"]) for r in ratios.iter_rows(named=True)}
    assert by_day[1] == (12, 0.25)
    assert by_day[2] == (5, None)  # fewer than the line's 10 records: not judged, a gap
    assert by_day[3] == (20, 0.1)
    assert by_day[4] == (None, None)  # no training record ended: no data
    assert set(ratios["max_ratio"]) == {0.2}
    spec = _spec(preemption_chart(counts, ratios, Texts("en")))
    ratio_panel = spec["vconcat"][1]
    assert [layer["mark"]["type"] for layer in ratio_panel["layer"]] == ["line", "rule"]
    assert spec["resolve"] == {"scale": {"color": "independent"}}  # a legend for scenarios, one for clusters
    # No line configured: the preempted records are still drawn, without a ratio panel.
    plain = preemption_frames(_view(config=replace(_config(), protection=demo_config().protection)))
    assert plain is not None
    assert plain[1].is_empty()


def _page(page: str, lang: Lang) -> AppTest:
    at = AppTest.from_file(str(HERE / "app_script.py"), default_timeout=30)
    at.session_state["lang"] = lang
    at.run()
    at.switch_page(str(SCREENS / f"{page}.py")).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _in_order(node: Any) -> list[str]:
    """The page's element types as drawn, top to bottom, columns and expanders included."""
    types: list[str] = []
    for child in getattr(node, "children", {}).values():
        types += _in_order(child) if getattr(child, "children", None) else [str(getattr(child, "type", ""))]
    return types


def _rows(chart: Any) -> list[dict[str, Any]]:
    return [row for ds in chart.proto.datasets for row in pa.ipc.open_stream(ds.data.data).read_all().to_pylist()]


@pytest.mark.parametrize(("page", "header", "tables_after"), [
    ("overview", "chart.alloc.header", True), ("inference", "chart.inference.header", True),
    ("idle", "chart.idle.header", True), ("preemption", "chart.preemption.header", False),
])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_each_page_draws_its_chart_before_its_tables(page: str, header: str, tables_after: bool, lang: Lang) -> None:
    at = _page(page, lang)
    tx = Texts(lang)
    headers = [h.value for h in at.subheader]
    assert tx(header) in headers
    charts = at.get("vega_lite_chart")
    assert charts, page
    rows = _rows(charts[0])
    assert rows, page  # the chart carries the series' values, not an empty frame
    spec = json.loads(charts[0].proto.spec)
    assert "vconcat" in spec or "encoding" in spec
    if "vconcat" in spec:  # a stack of layered panels fits the column, its axes and legend included
        assert spec["autosize"] == {"type": "fit-x", "contains": "padding"}, (page, spec.get("autosize"))
    drawn = _in_order(at.main)
    if tables_after:
        first_table = min(drawn.index(t) for t in ("dataframe", "html") if t in drawn)
        assert drawn.index("vega_lite_chart") < first_table, (page, drawn)
    # a few values an hour (or a day) reach the browser, never a minute or a job row: the overview's
    # cluster chart holds three lines and the utilisation per hour, the inference chart two services
    assert len(rows) <= 4 * 31 * 24 + 10, (page, len(rows))


def test_the_overview_draws_one_clusters_allocation_at_a_time() -> None:
    """A tab per cluster; only the chosen tab's chart is built and sent (dashboards/folds.lazy_tabs)."""
    tx = Texts("en")

    def clusters_drawn(at: AppTest) -> list[str]:
        titles = [json.loads(c.proto.spec).get("vconcat", [{}])[0].get("title") for c in at.get("vega_lite_chart")]
        return [t for t in titles if t and t.startswith(tx("chart.alloc.title", cluster=""))]

    at = _page("overview", "en")
    assert clusters_drawn(at) == [tx("chart.alloc.title", cluster="east")]
    at.session_state["overview.alloc"] = "west"
    at.run()
    assert clusters_drawn(at) == [tx("chart.alloc.title", cluster="west")]


def _text_px(text: str) -> float:
    """About how long `text` runs in Vega's 11 px bold axis title: a CJK character about 11 px, others 6.5 px."""
    return sum(11.0 if ord(ch) > 0x2E80 else 6.5 for ch in text)


def _sized_views(spec: dict[str, Any], height: float | None = None) -> list[tuple[float, str]]:
    """(height, y-axis title) of every view in `spec` that has both, through stacks and layers (a height of 0:
    Streamlit's own charts, sized by Streamlit)."""
    height = spec.get("height", height)
    y = spec.get("encoding", {}).get("y", {})
    found = [(float(height), str(y["title"]))] if height and "title" in y else []
    for part in ("layer", "vconcat"):
        for child in spec.get(part, []):
            found += _sized_views(child, height)
    return found


@pytest.mark.parametrize("page", ["overview", "queues", "inference", "idle", "preemption"])
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_y_axis_title_fits_the_height_of_its_panel(page: str, lang: Lang) -> None:
    """Vega fits a chart, decorations included, into its height: a rotated axis title longer than the panel
    squeezed the idle page's running-total plot to nothing (flat lines, no ticks, one legend entry left)."""
    specs = [json.loads(chart.proto.spec) for chart in _page(page, lang).get("vega_lite_chart")]
    views = [view for spec in specs for view in _sized_views(spec)]
    assert views, page
    for height, title in views:
        assert _text_px(title) <= height - 40, (page, height, title)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_charts_numbers_come_with_it_from_the_frame_it_draws(lang: Lang) -> None:
    """The folded table under a chart (dashboards/chart_data.py): the frames its marks draw, headed by the
    tooltips' titles and rounded as they format, one table per frame (the rule's own frame included)."""
    tx = Texts(lang)
    found = preemption_frames(_view(lang))
    assert found is not None
    counts, ratios = found
    tables = chart_tables(preemption_chart(counts, ratios, tx))
    drawn = [t for t in tables if tx("chart.preempted") in t.columns and t.height == counts.height]
    assert drawn
    assert drawn[0][tx("col.scenario")].to_list() == [
        tx.fmt.term("scenario", s) for s in counts["scenario"].to_list()]
    assert drawn[0][tx("chart.day")].to_list() == [d.isoformat() for d in counts["day"].to_list()]
    assert drawn[0][tx("chart.preempted")].to_list() == counts["preempted"].cast(pl.Float64).to_list()
    ratio = next(t for t in tables if f"{tx('chart.preemption_ratio')} (%)" in t.columns)
    by_day = dict(zip(ratio[tx("chart.day")].to_list(), ratio[f"{tx('chart.preemption_ratio')} (%)"].to_list(),
                      strict=True))
    assert by_day["2026-11-01"] == 25.0  # 0.25 drawn as 25.0% (".1%")
    assert by_day["2026-11-02"] is None  # a gap stays a gap, never 0
    objective = tables[-1]
    assert objective.columns == [tx("col.cluster"), f"{tx('chart.objective')} (%)"]
    assert objective.rows() == [("east", 20.0)]


def test_a_chart_with_two_panels_over_one_frame_gets_one_table() -> None:
    found = inference_frame(_view())
    assert found is not None
    hours, objectives = found
    tables = chart_tables(inference_chart(hours, objectives, Texts("en")))
    assert tables[0].height == hours.height
    tx = Texts("en")
    assert tables[0].columns[:2] == [tx("col.service"), tx("chart.hour")]
    assert len(tables[0].columns) == len(set(tables[0].columns)) >= 5  # p95, p99, the rate, the slots
