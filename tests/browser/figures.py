"""What each dashboard page must show, worked out from the warehouse here rather than by the pages'
code, and read back from the page in the browser (Streamlit's data grids draw on a canvas; the
rows in view are also in an accessible table, which is what is read here).

**Adding a page.** Every name in `dashboards.app.PAGES` and `DRILL_PAGES` needs at least one `Visit` (the browser test
fails for a page without one, naming this file). A page's checks live in a module of their own beside
this one, `tests/browser/figures_<topic>.py`, holding `VISITS: list[Visit]`; `all_visits()` finds
every such module, so a new page needs no edit here. A check reads the page (`grids`, `metrics`,
`main_text`), works out the same figures from `Shown` (the warehouse's month; `shown.db` opens the
warehouse file read-only for anything else) and returns how many it compared. A page reached with
query parameters (one team's jobs, one job) gives `query`, worked out from `Shown`. Then create the
page's reference screenshots: `UPDATE_GOLDEN=1 .venv/bin/pytest tests/browser/test_pages.py`
(tests/browser/shots.py).
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import polars as pl

from dashboards.texts import Texts
from gpusteward.config.schema import Config
from gpusteward.domain import Month
from reports.model import Quantity
from sla.outputs import MonthOutputs
from tests.browser.chart_figures import unfold, with_chart

GRIDS = '[data-testid="stDataFrame"]:has(table), [data-testid="gsTable"]:has(table)'  # either, once built
METRICS = '[data-testid="stMetricValue"]'
VERDICTS = {"missed": False, "at_risk": True, "met": True, "none": None}  # dashboards.frames.verdict


@dataclass(frozen=True)
class Shown:
    """The warehouse's month as the pages should show it."""

    outputs: MonthOutputs
    alerts: pl.DataFrame
    plans: pl.DataFrame
    pool_gpus: int
    team_names: dict[str, str]
    config: Config = field(default_factory=Config)
    db: Path | None = None  # the warehouse file, for a check that needs more than the month's outputs

    @property
    def month(self) -> Month:
        return self.outputs.month


Check = Callable[[Any, Shown, Texts], int]
"""Compare what the page shows with the warehouse; return how many figures were compared."""


@dataclass(frozen=True)
class Visit:
    """One page load of the browser test: `page` (a name in dashboards.app.PAGES), opened from the sidebar,
    or by its URL with `query` when given; `check`ed; its screenshot compared with
    tests/browser/reference/<name>.<lang>.png."""

    page: str
    check: Check
    title_key: str = ""  # the catalogue key of its heading, given {month}; default "<page>.title"
    query: Callable[[Shown], dict[str, str]] | None = None
    shot: str = ""  # the screenshot's name when one page has several visits; default: page
    figures_expected: bool = True  # False only where the test month holds nothing the page shows
    registered: bool = True  # False: a page in PAGES that nobody wrote a Visit for (its test fails)

    @property
    def name(self) -> str:
        return self.shot or self.page

    def heading(self, tx: Texts, shown: Shown) -> str:
        return tx(self.title_key or f"{self.page}.title", month=tx.fmt.month(shown.month))


def grids_drawn(page: Any) -> None:
    """Wait until every grid in view built its accessible table (not one inside a closed expander)."""
    frames = page.locator('[data-testid="stDataFrame"]')
    for i in range(frames.count()):
        if frames.nth(i).is_visible():
            frames.nth(i).locator("table").wait_for(state="attached", timeout=30_000)


def grids(page: Any) -> list[list[list[str]]]:
    """Each data grid's rows in view, as cell texts; the first row is the header. Grids folded away (a chart's
    numbers, tests/browser/chart_figures.py) are left out."""
    read = "t => [...t.querySelectorAll('tr')].map(r => [...r.querySelectorAll('th,td')].map(c => c.innerText.trim()))"
    grids_drawn(page)
    shown = page.locator(GRIDS).filter(visible=True)  # a grid's own table is drawn off-screen, so its frame decides
    return [shown.nth(i).locator("table").first.evaluate(read) for i in range(shown.count())]


def metrics(page: Any) -> list[str]:
    """The headline cards' values, in page order."""
    return [m.inner_text().strip() for m in page.locator(METRICS).all()]


def main_text(page: Any) -> str:
    """Everything the main area shows as text (not the sidebar)."""
    return str(page.locator('[data-testid="stMain"]').inner_text())


def _number(cell: str, tx: Texts) -> float:
    group, point = tx.fmt.messages["number.group"], tx.fmt.messages["number.decimal"]
    return float(cell.replace(group, "").replace(point, "."))


def _overview(page: Any, month: Shown, tx: Texts) -> int:
    out = month.outputs
    gpu_hours = float(out.usage["gpu_hours"].sum())
    judged = out.results.filter(pl.col("met").is_not_null())
    missed = judged.filter(~pl.col("met")).height
    idle = (float(out.idle["idle_minutes"].sum()) + float(out.idle["idle_held_minutes"].sum())) / 60
    gpu = out.completeness.filter(pl.col("source") == "gpu_minutes")
    q = tx.fmt.quantity
    expected = [
        tx.fmt.compact(gpu_hours),
        q(Quantity(gpu_hours / (month.pool_gpus * out.month.minutes / 60), "percent")),
        tx("metric.sla_missed_value", missed=missed, judged=judged.height),
        tx.fmt.compact(idle),
        str(_latest_alerts(month).filter(pl.col("status") == "firing").height),
        q(Quantity(float(gpu["present"].sum()) / float(gpu["expected"].sum()), "percent")),
    ]
    shown = metrics(page)
    assert shown == expected, (shown, expected)
    return len(expected) + _result_rows(page, month, tx)


def _result_rows(page: Any, month: Shown, tx: Texts) -> int:
    """Every results row in view shows the verdict the warehouse holds for its subject and indicator."""
    verdicts: dict[tuple[str, str], bool | None] = {}
    for r in month.outputs.results.iter_rows(named=True):
        subject = month.team_names.get(r["subject"], r["subject"]) if r["subject_kind"] == "team" else r["subject"]
        verdicts[(subject, tx.fmt.term("indicator", r["indicator"]))] = r["met"]
    words = {tx(f"sla.status.{v}"): met for v, met in VERDICTS.items()}
    checked = 0
    for grid in grids(page):
        for row in grid[1:]:
            word = row[0] if row else ""
            found = [key for key in verdicts if key[0] in row and key[1] in row]
            if word in words and found:
                assert verdicts[found[0]] is words[word], (row, found[0], verdicts[found[0]])
                checked += 1
    return checked


def _scenarios(page: Any, month: Shown, tx: Texts) -> int:
    results = month.outputs.results
    counts = {tx.fmt.term("scenario", s): frame for (s,), frame in results.group_by("scenario")}
    checked = 0
    for row in grids(page)[0][1:]:
        if row[0] in counts:
            judged = counts[row[0]].filter(pl.col("met").is_not_null())
            met = judged.filter(pl.col("met")).height
            assert [int(_number(c, tx)) for c in row[1:4]] == [judged.height, met, judged.height - met], row
            checked += 1
    return checked


def _idle(page: Any, month: Shown, tx: Texts) -> int:
    by_team = month.outputs.idle.group_by("team").agg(pl.col("idle_minutes").sum(), pl.col("idle_held_minutes").sum())
    hours = {
        month.team_names.get(t, t): (idle / 60, held / 60)
        for t, idle, held in by_team.select("team", "idle_minutes", "idle_held_minutes").iter_rows()
    }
    checked = 0
    for row in grids(page)[0][1:]:
        idle, held = hours[row[0]]
        assert abs(_number(row[2], tx) - idle) <= 0.05, (row, idle)
        assert abs(_number(row[3], tx) - held) <= 0.05, (row, held)
        checked += 1
    return checked


def _review(page: Any, month: Shown, tx: Texts) -> int:
    gpu_hours = tx.fmt.number(float(month.outputs.usage["gpu_hours"].sum()))
    records = tx.fmt.number(int(month.outputs.usage["jobs"].sum()))
    text = main_text(page)
    assert gpu_hours in text, gpu_hours
    assert records in text, records
    return 2


def _plans(page: Any, month: Shown, tx: Texts) -> int:
    shown = {row[0] for row in grids(page)[0][1:]}
    stored = set(month.plans["plan_id"].to_list())
    assert shown == stored, (shown, stored)
    return len(stored)


def _latest_alerts(month: Shown) -> pl.DataFrame:
    return month.alerts.sort("recorded_at").group_by("fingerprint", maintain_order=True).last()


def _alerts(page: Any, month: Shown, tx: Texts) -> int:
    """The firing alerts in the page's first table (or the words for none), the resolved ones in the fold that
    counts them, each with its latest status."""
    latest = _latest_alerts(month)
    firing, resolved = (
        {fp[:12]: tx(f"alert.status.{status}") for fp, status in latest.filter(which).select(
            "fingerprint", "status").iter_rows()}
        for which in (pl.col("status") == "firing", pl.col("status") != "firing"))
    if firing:
        assert {row[-1]: row[0] for row in grids(page)[0][1:]} == firing, (grids(page), firing)
    else:
        assert tx("alerts.none_firing") in main_text(page)
    if resolved:
        summary = grids(page)[1 if firing else 0]
        counts = latest.filter(pl.col("status") != "firing").group_by("line", "severity").len()
        stored = {(tx.fmt.term("line", line), tx.fmt.term("severity", severity)): tx.fmt.number(n)
                  for line, severity, n in counts.iter_rows()}
        at = [summary[0].index(tx(c)) for c in ("col.line", "col.severity", "col.alerts")]
        assert {(row[at[0]], row[at[1]]): row[at[2]] for row in summary[1:]} == stored, (summary, stored)
        label = tx("alerts.resolved", count=tx.fmt.number(len(resolved)))
        fold = page.locator('[data-testid="stExpander"]').filter(has_text=label)
        assert fold.count() == 1, label
        shown = {row[-1]: row[0] for row in unfold(page, fold.first)[0][1:]}
        assert shown == resolved, (shown, resolved)
    return len(firing) + len(resolved)


def _preemption(page: Any, month: Shown, tx: Texts) -> int:
    if month.outputs.ledger.is_empty():
        return 0
    return _result_rows(page, month, tx)


VISITS = [
    Visit("overview", with_chart("overview", _overview), title_key="page.title"),
    Visit("scenarios", _scenarios),
    Visit("queues", with_chart("queues", _result_rows)),
    Visit("inference", with_chart("inference", _result_rows)),
    Visit("idle", with_chart("idle", _idle), title_key="idle_page.title"),
    Visit("preemption", with_chart("preemption", _preemption)),
    Visit("review", _review),
    Visit("plans", _plans),
    Visit("alerts", _alerts),
]


def dashboard_pages() -> tuple[str, ...]:
    """Every page the dashboard's navigation holds: dashboards.app.PAGES, then its drill-down pages."""
    from dashboards.app import DRILL_PAGES, PAGES

    return (*PAGES, *DRILL_PAGES)


def all_visits() -> list[Visit]:
    """VISITS here, then those of every tests/browser/figures_*.py module (by module name)."""
    import tests.browser as package

    found = list(VISITS)
    for module in sorted(m.name for m in pkgutil.iter_modules(package.__path__)):
        if module.startswith("figures_"):
            found += importlib.import_module(f"tests.browser.{module}").VISITS
    return found


def _no_check(_page: Any, _shown: Shown, _tx: Texts) -> int:
    raise AssertionError("a page without a Visit has no figure check")


def visits_for(pages: Iterable[str]) -> list[Visit]:
    """Every page's visits, in the order of `pages`; a page without one gets a visit that fails, saying so."""
    registered = all_visits()
    names = list(pages)
    stale = sorted({v.page for v in registered} - set(names))
    if stale:
        raise AssertionError(f"figure checks for pages the dashboard no longer has: {stale}")
    return [v for name in names for v in ([v for v in registered if v.page == name] or [
        Visit(name, _no_check, registered=False)])]
