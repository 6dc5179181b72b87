"""What each dashboard page must show, worked out from the warehouse here rather than by the pages'
code, and read back from the page in the browser (Streamlit's data grids draw on a canvas; the
rows in view are also in an accessible table, which is what is read here)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import polars as pl

from dashboards.texts import Texts
from reports.model import Quantity
from sla.outputs import MonthOutputs

GRIDS = '[data-testid="stDataFrame"] table, [data-testid="stTable"] table'  # grids, and static tables
METRICS = '[data-testid="stMetricValue"]'
VERDICTS = {"missed": False, "at_risk": True, "met": True, "none": None}  # dashboards.frames.verdict


@dataclass(frozen=True)
class Month:
    """The warehouse's month as the pages should show it."""

    outputs: MonthOutputs
    alerts: pl.DataFrame
    plans: pl.DataFrame
    pool_gpus: int
    team_names: dict[str, str]


def grids(page: Any) -> list[list[list[str]]]:
    """Each data grid's rows in view, as cell texts; the first row is the header."""
    read = "t => [...t.querySelectorAll('tr')].map(r => [...r.querySelectorAll('th,td')].map(c => c.innerText.trim()))"
    frames = page.locator('[data-testid="stDataFrame"]')
    for i in range(frames.count()):  # a grid builds its accessible table once drawn (not inside a closed expander)
        if frames.nth(i).is_visible():
            frames.nth(i).locator("table").wait_for(state="attached", timeout=30_000)
    return [page.locator(GRIDS).nth(i).evaluate(read) for i in range(page.locator(GRIDS).count())]


def _number(cell: str, tx: Texts) -> float:
    group, point = tx.fmt.messages["number.group"], tx.fmt.messages["number.decimal"]
    return float(cell.replace(group, "").replace(point, "."))


def _overview(page: Any, month: Month, tx: Texts) -> int:
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
    shown = [m.inner_text().strip() for m in page.locator(METRICS).all()]
    assert shown == expected, (shown, expected)
    return len(expected) + _result_rows(page, month, tx)


def _result_rows(page: Any, month: Month, tx: Texts) -> int:
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


def _scenarios(page: Any, month: Month, tx: Texts) -> int:
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


def _idle(page: Any, month: Month, tx: Texts) -> int:
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


def _review(page: Any, month: Month, tx: Texts) -> int:
    gpu_hours = tx.fmt.number(float(month.outputs.usage["gpu_hours"].sum()))
    records = tx.fmt.number(int(month.outputs.usage["jobs"].sum()))
    text = page.locator('[data-testid="stMain"]').inner_text()
    assert gpu_hours in text, gpu_hours
    assert records in text, records
    return 2


def _plans(page: Any, month: Month, tx: Texts) -> int:
    shown = {row[0] for row in grids(page)[0][1:]}
    stored = set(month.plans["plan_id"].to_list())
    assert shown == stored, (shown, stored)
    return len(stored)


def _latest_alerts(month: Month) -> pl.DataFrame:
    return month.alerts.sort("recorded_at").group_by("fingerprint", maintain_order=True).last()


def _alerts(page: Any, month: Month, tx: Texts) -> int:
    stored = {fp[:12]: tx(f"alert.status.{status}") for fp, status in _latest_alerts(month).select(
        "fingerprint", "status").iter_rows()}
    shown = {row[-1]: row[0] for row in grids(page)[0][1:]}
    assert shown == stored, (shown, stored)
    return len(stored)


def _preemption(page: Any, month: Month, tx: Texts) -> int:
    if month.outputs.ledger.is_empty():
        return 0
    return _result_rows(page, month, tx)


CHECKS: dict[str, Callable[[Any, Month, Texts], int]] = {
    "overview": _overview,
    "scenarios": _scenarios,
    "queues": _result_rows,
    "inference": _result_rows,
    "idle": _idle,
    "preemption": _preemption,
    "review": _review,
    "plans": _plans,
    "alerts": _alerts,
}
"""Per page: check what it shows against the warehouse; the number of figures checked."""
