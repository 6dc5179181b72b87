"""The objectives the month was judged by: threshold, target, window and the error budget left.

One row per objective in force that judged at least one result (gpusteward.objectives), so a
reader sees what "met" meant: the share of good events the target asks for, over which window,
and how much of the budget the worst subject has left.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from gpusteward.domain import Scenario
from gpusteward.indicators import INDICATORS, Judgement
from gpusteward.objectives import Objective, objectives
from reports.context import Context
from reports.model import Block, Cell, Column, Message, Quantity, Row, Table, Term

_SCENARIO_ORDER = {s: i for i, s in enumerate(Scenario)}
_INDICATOR_ORDER = {name: i for i, name in enumerate(INDICATORS)}
_COLUMNS = (
    Column("col.scenario"),
    Column("col.indicator"),
    Column("col.objective", numeric=True),
    Column("col.target", numeric=True),
    Column("col.window"),
    Column("col.met_count", numeric=True),
    Column("col.missed_count", numeric=True),
    Column("col.budget_left", numeric=True),
)


def _target(objective: Objective) -> Cell:
    """The target of an event-judged objective; for the others the threshold is all there is."""
    if INDICATORS[objective.indicator].judgement is Judgement.EVENTS:
        return Quantity(objective.target, "percent")
    return Term("target", INDICATORS[objective.indicator].judgement.value)


def _window(objective: Objective) -> Cell:
    if objective.window is None:
        return Term("window", "month")
    return Quantity(objective.window.total_seconds(), "duration")


def objectives_table(ctx: Context, results: pl.DataFrame) -> list[Block]:
    judged = results.filter(pl.col("met").is_not_null() & (pl.col("scenario") != "all"))
    by_key: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for row in judged.iter_rows(named=True):
        by_key.setdefault((row["scenario"], row["indicator"]), []).append(row)
    rows: list[Row] = []
    in_force = sorted(
        objectives(ctx.config).values(),
        key=lambda o: (_SCENARIO_ORDER[o.scenario], _INDICATOR_ORDER.get(o.indicator, len(_INDICATOR_ORDER))),
    )
    for objective in in_force:
        found = by_key.get((objective.scenario.value, objective.indicator))
        if not found:
            continue
        budgets = [r["budget_left"] for r in found if r["budget_left"] is not None]
        rows.append(Row((
            Term("scenario", objective.scenario.value),
            Term("indicator", objective.indicator),
            ctx.objective(objective.indicator, objective.threshold),
            _target(objective),
            _window(objective),
            Quantity(sum(1 for r in found if r["met"]), "count"),
            Quantity(sum(1 for r in found if r["met"] is False), "count"),
            Quantity(min(budgets), "percent") if budgets else Term("common", "none"),
        )))
    if not rows:
        return []
    return [Message("sla.objectives"), Table(_COLUMNS, tuple(rows))]
