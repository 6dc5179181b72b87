"""Reclaimed this month: what the reclaimer warned about, did, and would have done, by scenario and team.

From the reclaim ledger (warehouse table reclaim_decisions, one line per warning and per action):
GPU-hours given back by the actions taken (`gpu_hours_recovered`: the GPUs for the rest of each job's
time limit, an upper bound) and, for shadow-mode policies, what they would have given back; warnings,
objections (jobs a team lead exempted after a warning), actions taken, and actions an approver
rejected, that found the job already ended, or that were dropped because the job was no longer idle
when they were due (the mistakes reversed or avoided).
"""

from __future__ import annotations

import polars as pl

from reports.context import Context
from reports.evidence import Evidence
from reports.model import Block, Cell, Column, Message, Quantity, Row, Section, Table, Term, Terms

_TAKEN = ("done",)
_REVERSED = ("rejected", "already_ended", "failed", "stale")


def _counts() -> list[pl.Expr]:
    warning = pl.col("kind") == "warning"  # objections are lines of kind `objection` (month_lines)
    action = pl.col("kind") == "action"
    return [
        (warning & (pl.col("state") != "shadow")).sum().alias("warnings"),
        (action & pl.col("state").is_in(_TAKEN)).sum().alias("actions"),
        ((action & pl.col("state").is_in(_REVERSED)) | (pl.col("kind") == "objection")).sum().alias("reversed"),
        (action & pl.col("state").is_in(("pending", "awaiting_approval"))).sum().alias("waiting"),
        pl.when(action & pl.col("state").is_in(_TAKEN)).then(pl.col("gpu_hours_recovered")).sum().alias("recovered"),
        (warning & (pl.col("state") == "shadow")).sum().alias("shadow_warnings"),
        (action & (pl.col("state") == "shadow")).sum().alias("shadow"),
        pl.when(action & (pl.col("state") == "shadow")).then(pl.col("gpu_hours_recovered")).sum().alias("would"),
        pl.len().alias("n"),
    ]


def build_reclaimed(ctx: Context) -> Section:
    lines = ctx.reclaimed if ctx.reclaimed is not None else pl.DataFrame()
    policies = ctx.config.reclaim.policies
    modes = sorted({p.mode for p in policies})
    blocks: list[Block] = [Message("reclaimed.policies", (("policies", Quantity(len(policies), "count")),
                                                          ("modes", Terms("reclaim_mode", tuple(modes)))))]
    if lines.is_empty():
        return Section("reclaimed", (*blocks, Message("reclaimed.none")))
    totals = lines.select(_counts()).row(0, named=True)
    ev = ctx.notes.ref(Evidence("reclaim_decisions", lines.height, None))
    blocks.append(Message("reclaimed.totals", (
        ("warnings", Quantity(totals["warnings"], "count")),
        ("actions", Quantity(totals["actions"], "count")),
        ("recovered", Quantity(totals["recovered"] or 0.0, "gpu_hours")),
        ("shadow_warnings", Quantity(totals["shadow_warnings"], "count")),
        ("shadow", Quantity(totals["shadow"], "count")),
        ("would", Quantity(totals["would"] or 0.0, "gpu_hours")),
        ("reversed", Quantity(totals["reversed"], "count")),
    ), ev))
    groups = lines.group_by("scenario", "team").agg(_counts()).sort(
        ["recovered", "would", "scenario", "team"], descending=[True, True, False, False], nulls_last=True)
    rows: list[Row] = []
    for row in groups.iter_rows(named=True):
        cells: tuple[Cell, ...] = (
            Term("scenario", row["scenario"]),
            ctx.team(row["team"]),
            Quantity(row["warnings"], "count"),
            Quantity(row["actions"], "count"),
            Quantity(row["recovered"] or 0.0, "gpu_hours"),
            Quantity(row["shadow_warnings"], "count"),
            Quantity(row["shadow"], "count"),
            Quantity(row["would"] or 0.0, "gpu_hours"),
            Quantity(row["reversed"], "count"),
            Quantity(row["waiting"], "count"),
        )
        detail = f"scenario={row['scenario']} team={row['team']}"
        rows.append(Row(cells, ctx.notes.ref(Evidence("reclaim_decisions", row["n"], None, None, detail))))
    columns = (
        Column("col.scenario"), Column("col.team"), Column("col.reclaim_warnings", numeric=True),
        Column("col.reclaim_actions", numeric=True), Column("col.reclaim_recovered", numeric=True),
        Column("col.reclaim_shadow_warnings", numeric=True), Column("col.reclaim_shadow", numeric=True),
        Column("col.reclaim_would", numeric=True),
        Column("col.reclaim_reversed", numeric=True), Column("col.reclaim_waiting", numeric=True),
    )
    blocks += [Message("reclaimed.by_group"), Table(columns, tuple(rows)), Message("reclaimed.upper_bound")]
    return Section("reclaimed", tuple(blocks))
