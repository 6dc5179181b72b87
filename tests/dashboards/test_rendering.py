"""Clean rendering: statuses in words on coloured cells (no glyph a font may lack), budgets that say
why they are empty, the queues page led by what needs attention, plan reasons wrapped."""

from __future__ import annotations

import json
import re
import unicodedata
from pathlib import Path

import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from dashboards.app import SCREENS
from dashboards.frames import budget_text, verdict
from dashboards.tables import STATIC_ROWS, STATUS_STYLES
from dashboards.texts import Texts
from reports.locale import Lang
from tests.dashboards.shown import static_frame, table_elements, tables

HERE = Path(__file__).parent
LOCALES = Path(__file__).resolve().parents[2] / "dashboards" / "locales"


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_status_words_are_letters_only(lang: str) -> None:
    """Emoji circles and check marks render as empty boxes in Chromium on Debian without a colour-emoji font."""
    catalogue = json.loads((LOCALES / f"{lang}.json").read_text(encoding="utf-8"))
    for key in STATUS_STYLES:
        word = catalogue[key]
        symbols = [c for c in word if unicodedata.category(c).startswith(("S", "C"))]
        assert word.strip(), key
        assert not symbols, (key, word, symbols)


def _row(**fields: object) -> dict[str, object]:
    return {"indicator": "queue_wait_p95", "value": None, "objective": None, "met": None, "budget_left": None,
            **fields}


def test_verdicts_and_budgets() -> None:
    tx = Texts("en")
    no_objective = _row(value=600.0)
    level_met = _row(value=600.0, objective=3600.0, met=True)  # judged against a threshold: no budget
    nothing_to_judge = _row(indicator="success_rate", objective=0.9)
    with_budget = _row(indicator="success_rate", value=0.97, objective=0.9, met=True, budget_left=0.7)
    assert [budget_text(r, tx) for r in (no_objective, level_met, nothing_to_judge, with_budget)] == [
        "—", "—", "no data", "70.0%"]
    assert verdict(no_objective) == "none"
    assert verdict(level_met) == "met"
    assert verdict(_row(value=3400.0, objective=3600.0, met=True)) == "at_risk"  # within 10% of the threshold
    assert verdict(_row(indicator="success_rate", value=0.5, objective=0.5, met=True, budget_left=0.0667)
                   ) == "at_risk"  # under a quarter of the budget left
    assert verdict(with_budget) == "met"
    assert verdict(_row(value=7200.0, objective=3600.0, met=False, budget_left=-1.0)) == "missed"
    # A share at or above a level: the room between the level and 100% is its budget.
    complete, nearly = (_row(indicator="telemetry_completeness", value=v, objective=0.995, met=True)
                        for v in (1.0, 0.996))
    assert (verdict(complete), verdict(nearly)) == ("met", "at_risk")  # all room left; a fifth of it
    assert verdict(_row(indicator="success_rate", value=0.9, objective=0.5, met=True)) == "met"
    assert verdict(_row(indicator="success_rate", value=0.533, objective=0.5, met=True)) == "at_risk"


def _queues(lang: str, *, unfold: bool = True) -> AppTest:
    """The queues page; `unfold`: with its full results unfolded (a fold's body runs only when open)."""
    at = AppTest.from_file(str(HERE / "app_script.py"), default_timeout=30)
    at.session_state["lang"] = lang
    at.run()
    at.switch_page(str(SCREENS / "queues.py")).run()
    if unfold:
        at.session_state["queues.all_results"] = True  # what the browser sends when the reader unfolds it
        at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def test_folded_results_are_not_built_until_unfolded() -> None:
    at = _queues("en", unfold=False)
    tx = Texts("en")
    folded = next(e for e in at.expander if e.label == tx("queues.all_results", count=7, judged=3))
    assert len(tables(folded)) == 0
    chart_numbers = next(e for e in at.expander if e.label == tx("chart.data"))
    assert len(tables(chart_numbers)) == 0
    at.session_state["queues.all_results"] = True
    at.run()
    unfolded = next(e for e in at.expander if e.label == tx("queues.all_results", count=7, judged=3))
    assert len(tables(unfolded)[0]) == 7


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_queues_page_leads_with_what_needs_attention(lang: Lang) -> None:
    at = _queues(lang)
    tx = Texts(lang)
    first = tables(at)[0]  # static: each row's evidence wraps instead of being cut off
    statuses = set(first[tx("col.status")])
    assert statuses, first
    assert statuses <= {tx("sla.status.missed"), tx("sla.status.at_risk")}, statuses
    assert at.expander[0].label == tx("chart.data")  # the wait chart's numbers, folded under it
    expander = at.expander[1]
    assert expander.label == tx("queues.all_results", count=7, judged=3)
    full = tables(expander)[0]
    assert len(full) == 7 > len(first)
    assert tx("budget.not_applicable") in set(full[tx("col.budget_left")])  # rows without an objective


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_status_cells_are_coloured_by_their_words(lang: Lang) -> None:
    at = _queues(lang)
    tx = Texts(lang)
    table = table_elements(next(e for e in at.expander if e.label != tx("chart.data")))[0]  # the full table, folded
    assert table.type == "html"  # seven rows: static
    css = {tx(key): _declarations(style) for key, style in STATUS_STYLES.items()}
    rules = {}  # cell -> its CSS, from the Styler's rules like "#T_x_row0_col0, #T_x_row3_col0 { color: ... }"
    for selectors, style in re.findall(r"([^{}]+)\{([^}]*)\}", table.value):
        for cell in re.findall(r"_row(\d+)_col0\b", selectors):
            rules[int(cell)] = _declarations(style)
    words = list(static_frame(table.value)[tx("col.status")])
    assert len(set(words)) >= 3, words
    assert {i: css[word] for i, word in enumerate(words)} == rules


def _declarations(style: str) -> set[str]:
    return {d.replace(" ", "") for d in style.replace("\n", "").split(";") if d.strip()}


def test_a_short_table_is_static_and_escaped_and_a_long_one_a_grid() -> None:
    def page() -> None:
        import polars as pl

        from dashboards.tables import STATIC_ROWS, show_table
        from dashboards.texts import Texts

        for rows in (STATIC_ROWS, STATIC_ROWS + 1):
            show_table(pl.DataFrame({"Team": ["<b>NLP</b>"] * rows, "GPU-hours": [1234.5] * rows}), Texts("en"))

    at = AppTest.from_function(page).run()
    static, grid = table_elements(at)
    assert (static.type, grid.type) == ("html", "dataframe")
    shown = static_frame(static.value)
    assert len(shown) == STATIC_ROWS
    assert len(grid.value) == STATIC_ROWS + 1
    assert set(shown["Team"]) == {"<b>NLP</b>"}  # the text itself, not markup: the cell was escaped
    assert "&lt;b&gt;NLP&lt;/b&gt;" in static.value
    assert set(shown["GPU-hours"]) == {"1,234.5"}  # written in the page's language, not as a float's digits


def test_plan_reasons_are_wrapped_not_cut() -> None:
    at = AppTest.from_file(str(HERE / "app_script.py"), default_timeout=30).run()
    at.switch_page(str(SCREENS / "plans.py")).run()
    assert not at.exception, [e.value for e in at.exception]
    items = next(t for t in tables(at) if "Reason" in t.columns)  # static, so its cells wrap
    reasons = list(items["Reason"])
    assert reasons, items
    assert all(len(r) > 20 for r in reasons), reasons


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_queues_page_opens_with_wait_p95_by_day_against_each_objective(lang: Lang) -> None:
    at = _queues(lang)
    tx = Texts(lang)
    assert at.subheader[0].value == tx("queues.chart")  # the chart comes before the tables
    charts = at.get("vega_lite_chart")
    assert len(charts) == 1
    spec = json.loads(charts[0].proto.spec)
    rows = [row for ds in charts[0].proto.datasets for row in pa.ipc.open_stream(ds.data.data).read_all().to_pylist()]
    drawn = {(r["queue"], str(r["day"])): (r["p95_h"], r["objective_h"]) for r in rows}
    # west/interactive has no wait objective, so it is not drawn; hours from the series' seconds
    assert drawn == {("east/train", "2026-11-01"): (1.5, 2.0), ("east/train", "2026-11-02"): (0.5, 2.0),
                     ("west/eval", "2026-11-01"): (5.5, 1.0), ("west/eval", "2026-11-02"): (2.5, 1.0)}
    marks = [layer["mark"]["type"] for layer in spec["layer"]]
    assert marks == ["line", "rule"]  # the daily p95, and the objective as a dashed rule
    assert spec["layer"][0]["encoding"]["y"]["title"] == tx("chart.wait_p95_h")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_inference_page_leads_with_the_services_that_need_attention(lang: Lang) -> None:
    at = AppTest.from_file(str(HERE / "app_script.py"), default_timeout=30)
    at.session_state["lang"] = lang
    at.run()
    at.switch_page(str(SCREENS / "inference.py")).run()
    assert not at.exception, [e.value for e in at.exception]
    tx = Texts(lang)
    first = tables(at)[0]
    statuses = list(first[tx("col.status")])
    assert statuses, first
    assert set(statuses) <= {tx("sla.status.missed"), tx("sla.status.at_risk")}, statuses
    assert statuses == sorted(statuses, key=lambda s: s != tx("sla.status.missed"))  # misses first
    folded = next(e for e in at.expander if e.label.startswith(tx("inference.all_results", count=0)[:6]))
    assert not tables(folded)  # built only when unfolded
    at.session_state["inference.all_results"] = True
    at.run()
    full = tables(next(e for e in at.expander if e.label == folded.label))[0]
    assert len(full) > len(first)
    assert folded.label == tx("inference.all_results", count=len(full))
