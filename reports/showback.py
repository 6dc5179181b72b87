"""Showback: what each team was allocated, what it cost, the part held idle, energy, and the capacity
nobody was allocated (SHOWBACK, sla/showback.py; docs/showback.md)."""

from __future__ import annotations

from decimal import Decimal

import polars as pl

from reports.context import Context
from reports.evidence import Evidence, ratio
from reports.model import Block, Cell, Chart, Column, Message, Quantity, Row, Section, Series, Table, Term, Text

_MONEY = ("gpu_cost", "idle_cost", "energy_cost", "unallocated_share", "total_cost")
_UNALLOCATED = "\x00unallocated"  # the unallocated rows' team, kept apart from any team's key


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, Decimal | int | float) else None


def _money(value: object) -> Quantity:
    return Quantity(_number(value), "money")


def _by_team(frame: pl.DataFrame) -> pl.DataFrame:
    """One row per team and one for the unallocated capacity (unless a platform team carries it)."""
    keyed = frame.with_columns(
        pl.when((pl.col("kind") == "unallocated") & pl.col("team").is_null()).then(pl.lit(_UNALLOCATED))
        .otherwise(pl.col("team")).alias("_team"),
        (pl.col("completeness") * pl.col("gpu_hours")).alias("_covered"),
    )
    return keyed.group_by("_team").agg(
        pl.col("jobs").sum(), pl.col("gpu_hours").sum(), pl.col("idle_gpu_hours").sum(), pl.col("energy_kwh").sum(),
        *[pl.col(c).sum() for c in _MONEY],
        (pl.col("_covered").sum() / pl.col("gpu_hours").filter(pl.col("_covered").is_not_null()).sum())
        .alias("completeness"),
        pl.col("cluster").unique().sort().str.join(",").alias("clusters"),
        pl.len().alias("n"),
    ).sort(["total_cost", "_team"], descending=[True, False])


def _team_cell(ctx: Context, key: str) -> Cell:
    return Term("showback", "unallocated") if key == _UNALLOCATED else ctx.team(key)


def _chart(ctx: Context, teams: pl.DataFrame, note: int) -> Chart | None:
    """Cost per team, stacked: held busy, held idle, energy, and the unallocated capacity shared to it."""
    if teams.is_empty() or not any(float(v or 0) for v in teams["total_cost"].to_list()):
        return None
    busy = [float(g or 0) - float(i or 0) for g, i in zip(teams["gpu_cost"], teams["idle_cost"], strict=True)]
    idle = [float(v or 0) for v in teams["idle_cost"]]
    energy = [float(v or 0) for v in teams["energy_cost"]]
    shared = [float(v or 0) for v in teams["unallocated_share"]]
    series = (Series(Term("col", "cost_busy"), tuple(busy)), Series(Term("col", "cost_idle"), tuple(idle)),
              Series(Term("col", "energy_cost"), tuple(energy)),
              Series(Term("col", "unallocated_share"), tuple(shared)))
    categories = tuple(_team_cell(ctx, str(k)) for k in teams["_team"])
    return Chart("showback_by_team", "stacked", categories, series, note=note)


def build_showback(ctx: Context) -> Section:
    reason = ctx.unavailable("showback")
    if reason is not None:
        return Section("showback", unavailable=reason)
    frame = ctx.frame("showback")
    sb = ctx.config.showback
    allocated = frame.filter(pl.col("kind") == "allocated")
    free = frame.filter(pl.col("kind") == "unallocated")
    clusters = sorted({str(c) for c in frame["cluster"].to_list() if c is not None})
    capacity = frame["gpu_hours"].sum()
    note = ctx.notes.ref(Evidence("showback", frame.height, ratio(
        float((frame["cluster_completeness"] * frame["gpu_hours"]).sum()), float(capacity)) if capacity else None,
        Message("evidence.showback", (("clusters", Text(", ".join(clusters))),))))
    blocks: list[Block] = [
        Message("showback.total", (
            ("currency", Text(str(frame["currency"][0]))),
            ("allocated", Quantity(_number(allocated["gpu_hours"].sum()), "gpu_hours")),
            ("capacity", Quantity(_number(capacity), "gpu_hours")),
            ("cost", _money(allocated["gpu_cost"].sum())),
            ("idle", _money(allocated["idle_cost"].sum())),
            ("free_hours", Quantity(_number(free["gpu_hours"].sum()), "gpu_hours")),
            ("free_cost", _money(free["gpu_cost"].sum())),
            ("kwh", Quantity(_number(frame["energy_kwh"].sum()), "kwh")),
            ("energy_cost", _money(frame["energy_cost"].sum())),
        ), note),
        Message(f"showback.unallocated.{sb.unallocated}", (("team", ctx.team(sb.platform_team or None)),)),
    ]
    teams = _by_team(frame)
    shared = bool(frame["unallocated_share"].abs().sum())  # a column of zeros says nothing: left out
    rows: list[Row] = []
    for row in teams.iter_rows(named=True):
        cells: tuple[Cell, ...] = (
            _team_cell(ctx, str(row["_team"])),
            Quantity(row["gpu_hours"], "gpu_hours"),
            _money(row["gpu_cost"]),
            _money(row["idle_cost"]),
            Quantity(row["energy_kwh"], "kwh"),
            _money(row["energy_cost"]),
            *((_money(row["unallocated_share"]),) if shared else ()),
            _money(row["total_cost"]),
            Quantity(row["completeness"], "percent"),
        )
        pointer = f"team={'unallocated' if row['_team'] == _UNALLOCATED else row['_team']} clusters={row['clusters']}"
        rows.append(Row(cells, ctx.notes.ref(Evidence("showback", row["n"], row["completeness"], None, pointer))))
    columns = (
        Column("col.team"), Column("col.gpu_hours", numeric=True), Column("col.gpu_cost", numeric=True),
        Column("col.idle_cost", numeric=True), Column("col.energy", numeric=True),
        Column("col.energy_cost", numeric=True),
        *((Column("col.unallocated_share", numeric=True),) if shared else ()),
        Column("col.total_cost", numeric=True), Column("col.telemetry", numeric=True),
    )
    blocks += [Message("showback.by_team"), Table(columns, tuple(rows))]
    if (chart := _chart(ctx, teams, note)) is not None:
        blocks.append(chart)
    if frame["energy_counter_resets"].sum() or frame["energy_unknown_minutes"].sum():
        blocks.append(Message("showback.energy_gaps", (
            ("resets", Quantity(_number(frame["energy_counter_resets"].sum()), "count")),
            ("unknown", Quantity(_number(frame["energy_unknown_minutes"].sum()), "count")),
        ), note))
    return Section("showback", tuple(blocks))
