"""Task mix: allocated GPU-hours by scenario and by team (from USAGE)."""

from __future__ import annotations

import polars as pl

from reports.context import Context
from reports.evidence import Evidence, nullable_sum, overall_coverage, ratio
from reports.figures import daily_charts, scenario_chart, team_share_chart
from reports.model import Block, Cell, Column, Message, Quantity, Row, Section, Table, Term, Text


def _clusters(frame: pl.DataFrame) -> list[str]:
    return sorted({str(c) for c in frame["cluster"].to_list() if c is not None})


def _grouped(usage: pl.DataFrame, by: str) -> pl.DataFrame:
    return (
        usage.group_by(by)
        .agg(
            *nullable_sum("gpu_hours", "jobs"),
            pl.len().alias("n"),
            pl.col("cluster").unique().sort().str.join(",").alias("clusters"),
        )
        .sort(["gpu_hours", by], descending=[True, False], nulls_last=True)
    )


def _evidence(ctx: Context, by: str, name: str, row: dict[str, object], clusters: list[str]) -> int:
    coverage = overall_coverage(ctx.frame("completeness"), "jobs", clusters)
    pointer = f"{by}={name} clusters={row['clusters']}"
    detail = Message("evidence.usage", (("jobs", Quantity(_f(row["jobs"]), "count")),))
    return ctx.notes.ref(Evidence("usage", _i(row["n"]), coverage, detail, pointer))


def _f(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _i(value: object) -> int | None:
    return int(value) if isinstance(value, int) else None


def build_task_mix(ctx: Context) -> Section:
    reason = ctx.unavailable("usage")
    if reason is not None:
        return Section("task_mix", unavailable=reason)
    usage = ctx.frame("usage")
    sums = usage.select(nullable_sum("gpu_hours", "jobs")).row(0, named=True)
    total = _f(sums["gpu_hours"])
    clusters = _clusters(usage)
    blocks: list[Block] = [
        Message(
            "task_mix.total",
            (
                ("gpu_hours", Quantity(total, "gpu_hours")),
                ("jobs", Quantity(_f(sums["jobs"]), "count")),
                ("clusters", Text(", ".join(clusters))),
            ),
        )
    ]

    rows: list[Row] = []
    for row in _grouped(usage, "scenario").iter_rows(named=True):
        cells: tuple[Cell, ...] = (
            Term("scenario", row["scenario"]),
            Quantity(row["gpu_hours"], "gpu_hours"),
            Quantity(ratio(row["gpu_hours"], total), "percent"),
            Quantity(row["jobs"], "count"),
        )
        group_clusters = str(row["clusters"]).split(",")
        rows.append(Row(cells, _evidence(ctx, "scenario", str(row["scenario"]), row, group_clusters)))
    columns: tuple[Column, ...] = (
        Column("col.scenario"),
        Column("col.gpu_hours", numeric=True),
        Column("col.share_of_pool", numeric=True),
        Column("col.jobs", numeric=True),
    )
    blocks += [Message("task_mix.by_scenario"), Table(columns, tuple(rows))]
    if (chart := scenario_chart(ctx, usage)) is not None:
        blocks.append(chart)
    if ctx.unavailable("daily_usage") is None:
        blocks += daily_charts(ctx, ctx.frame("daily_usage"))

    rows = []
    for row in _grouped(usage, "team").iter_rows(named=True):
        team = ctx.config.teams.get(str(row["team"]))
        entitled: Cell = Quantity(team.entitled_share, "percent") if team else Term("common", "not_configured")
        cells = (
            ctx.team(row["team"]),
            Quantity(row["gpu_hours"], "gpu_hours"),
            Quantity(ratio(row["gpu_hours"], total), "percent"),
            entitled,
            Quantity(row["jobs"], "count"),
        )
        group_clusters = str(row["clusters"]).split(",")
        rows.append(Row(cells, _evidence(ctx, "team", str(row["team"]), row, group_clusters)))
    columns = (
        Column("col.team"),
        Column("col.gpu_hours", numeric=True),
        Column("col.share_of_pool", numeric=True),
        Column("col.entitled_share", numeric=True),
        Column("col.jobs", numeric=True),
    )
    blocks += [Message("task_mix.by_team"), Table(columns, tuple(rows))]
    if (chart := team_share_chart(ctx, usage)) is not None:
        blocks.append(chart)
    return Section("task_mix", tuple(blocks))
