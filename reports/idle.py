"""Idle GPU-hours: idle vs idle-held vs no data, by team and the jobs that held the most (IDLE_BY_JOB; an
array's tasks as one row, named as Slurm names them: `123_[1-3]`, `123_4`)."""

from __future__ import annotations

import polars as pl

from reports.context import Context
from reports.evidence import Evidence, nullable_sum, ratio
from reports.figures import idle_chart
from reports.model import Block, Cell, Column, Message, Quantity, Row, Section, Table, Term, Terms, Text
from sla.idle import idle_by_submission

TOP_JOBS = 10


def _hours(minutes: object) -> Quantity:
    return Quantity(float(minutes) / 60 if isinstance(minutes, int | float) else None, "gpu_hours")


def _covered(row: dict[str, object]) -> float | None:
    with_data, no_data = row["gpu_minutes"], row["no_data_minutes"]
    if not isinstance(with_data, int) or not isinstance(no_data, int):
        return None
    return ratio(with_data, with_data + no_data)


def _pointer(row: dict[str, object]) -> str:
    util = f" util={row['util_source']}" if row["util_source"] else ""
    if row.get("array_job_id") is not None:
        return f"cluster={row['cluster']} array_job_id={row['array_job_id']} ({row['tasks']} tasks){util}"
    return f"cluster={row['cluster']} job={row['job_id']}{util}"


def _zero_activity(ctx: Context, idle: pl.DataFrame) -> list[Block]:
    """Idle runs next to held time at exactly zero engine activity, by scenario, and which is which.

    Both are true and they measure different things: idle counts runs of `idle.min_minutes` or more
    below `idle.util_below`; zero activity counts every held GPU-minute at exactly 0, however short
    the gap (a training step waiting on data or a checkpoint counts there, not as idle).
    """
    if "zero_activity_minutes" not in idle.columns or idle["zero_activity_minutes"].null_count() == idle.height:
        return []
    scenarios = (
        idle.group_by("scenario")
        .agg(*nullable_sum("gpu_minutes", "wasted", "zero_activity_minutes"), pl.len().alias("n"))
        .sort(["zero_activity_minutes", "scenario"], descending=[True, False], nulls_last=True)
    )
    rows: list[Row] = []
    for row in scenarios.iter_rows(named=True):
        cells: tuple[Cell, ...] = (
            Term("scenario", row["scenario"]),
            _hours(row["gpu_minutes"]),
            _hours(row["wasted"]),
            _hours(row["zero_activity_minutes"]),
            Quantity(ratio(row["zero_activity_minutes"], row["gpu_minutes"]), "percent"),
        )
        ev = Evidence("idle_by_job", row["n"], None, None, f"scenario={row['scenario']}")
        rows.append(Row(cells, ctx.notes.ref(ev)))
    total = idle.select(nullable_sum("wasted", "zero_activity_minutes")).row(0, named=True)
    columns = (
        Column("col.scenario"),
        Column("col.with_data", numeric=True),
        Column("col.idle_runs", numeric=True),
        Column("col.zero_activity", numeric=True),
        Column("col.zero_share", numeric=True),
    )
    return [
        Message("idle.zero_activity", (
            ("idle", _hours(total["wasted"])),
            ("zero", _hours(total["zero_activity_minutes"])),
            ("minutes", Quantity(ctx.config.idle.min_minutes, "count")),
            ("below", Quantity(ctx.config.idle.util_below / 100.0, "percent")),
        )),
        Table(columns, tuple(rows)),
    ]


def build_idle(ctx: Context) -> Section:
    reason = ctx.unavailable("idle")
    if reason is not None:
        return Section("idle", unavailable=reason)
    idle = ctx.frame("idle").with_columns(
        (pl.col("idle_minutes").fill_null(0) + pl.col("idle_held_minutes").fill_null(0)).alias("wasted")
    )
    minutes = ("gpu_minutes", "busy_minutes", "idle_minutes", "idle_held_minutes", "no_data_minutes")
    sums = idle.select(nullable_sum(*minutes)).row(0, named=True)
    blocks: list[Block] = [
        Message("idle.totals", (
            ("with_data", _hours(sums["gpu_minutes"])),
            ("busy", _hours(sums["busy_minutes"])),
            ("idle", _hours(sums["idle_minutes"])),
            ("held", _hours(sums["idle_held_minutes"])),
            ("no_data", _hours(sums["no_data_minutes"])),
        ), ctx.notes.ref(Evidence("idle_by_job", idle.height, _covered(sums)))),
        Message("idle.honest"),
    ]
    sources = tuple(sorted({str(s) for s in idle["util_source"].to_list() if s}))
    if sources:
        blocks.append(Message("idle.util_source", (("sources", Terms("util_source", sources)),)))

    teams = (
        idle.group_by("team")
        .agg(*nullable_sum("gpu_minutes", "idle_minutes", "idle_held_minutes", "no_data_minutes", "wasted"),
             pl.len().alias("n"))
        .sort(["wasted", "team"], descending=[True, False], nulls_last=True)
    )
    rows: list[Row] = []
    for row in teams.iter_rows(named=True):
        cells: tuple[Cell, ...] = (
            ctx.team(row["team"]),
            _hours(row["gpu_minutes"]),
            _hours(row["idle_minutes"]),
            _hours(row["idle_held_minutes"]),
            Quantity(ratio(row["wasted"], row["gpu_minutes"]), "percent"),
            _hours(row["no_data_minutes"]),
        )
        ev = Evidence("idle_by_job", row["n"], _covered(row), None, f"team={row['team']}")
        rows.append(Row(cells, ctx.notes.ref(ev)))
    columns = (
        Column("col.team"),
        Column("col.with_data", numeric=True),
        Column("col.idle", numeric=True),
        Column("col.idle_held", numeric=True),
        Column("col.idle_share", numeric=True),
        Column("col.no_data", numeric=True),
    )
    blocks += [Message("idle.by_team"), Table(columns, tuple(rows))]
    if (chart := idle_chart(ctx, idle, _covered(sums))) is not None:
        blocks.append(chart)
    blocks += _zero_activity(ctx, idle)

    # An array's tasks are one submission: one row, named as Slurm names it (`123_[1-3]`).
    top = idle_by_submission(idle.drop("wasted")).filter(pl.col("wasted") > 0).sort(
        ["wasted", "cluster", "job"], descending=[True, False, False]).head(TOP_JOBS)
    if top.is_empty():
        blocks.append(Message("idle.no_idle_jobs"))
        return Section("idle", tuple(blocks))
    rows = []
    for row in top.iter_rows(named=True):
        cells = (
            Text(f"{row['cluster']}/{row['job']}"),
            ctx.team(row["team"]),
            Term("scenario", row["scenario"]),
            _hours(row["idle_minutes"]),
            _hours(row["idle_held_minutes"]),
            _hours(row["no_data_minutes"]),
        )
        ev = Evidence("idle_by_job", int(row["tasks"]), _covered(row), None, _pointer(row))
        rows.append(Row(cells, ctx.notes.ref(ev)))
    columns = (
        Column("col.job"),
        Column("col.team"),
        Column("col.scenario"),
        Column("col.idle", numeric=True),
        Column("col.idle_held", numeric=True),
        Column("col.no_data", numeric=True),
    )
    blocks += [Message("idle.top_jobs", (("count", Quantity(top.height, "count")),)), Table(columns, tuple(rows))]
    return Section("idle", tuple(blocks))
