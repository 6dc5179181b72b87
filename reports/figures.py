"""Charts as data: each built from the same frame as the table next to it, with its own evidence note.

Values are converted to the unit of the chart's value axis here (hours for queue wait, seconds for
latency), so renderers only draw. A chart with nothing to draw is not built: the table says why.
"""

from __future__ import annotations

from datetime import date, timedelta
from typing import Any

import polars as pl

from gpusteward import evidence as stored_evidence
from reports.context import Context
from reports.evidence import Evidence, nullable_sum, overall_coverage, ratio
from reports.model import Cell, Chart, Message, Series, Term, Text

QUEUE_SERIES = ("queue_wait_p50", "queue_wait_p95", "queue_wait_max")
SERVICE_SERIES = ("latency_p95", "latency_p99")
HOUR = 3600.0


def _num(value: object) -> float | None:
    return float(value) if isinstance(value, int | float) else None


def _scaled(value: object, by: float) -> float | None:
    number = _num(value)
    return None if number is None else number / by


def _results_evidence(ctx: Context, rows: pl.DataFrame, pointer: str) -> int:
    """One note for a chart drawn from several SLA results: their rows summed, the worst completeness."""
    counts = [r for r in rows["rows"].to_list() if r is not None]
    complete = [c for c in rows["completeness"].to_list() if c is not None]
    ev = Evidence("sla_results", sum(counts) if counts else None, min(complete) if complete else None, None, pointer)
    return ctx.notes.ref(ev)


def _by_subject(rows: pl.DataFrame) -> dict[str, dict[str, dict[str, Any]]]:
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for row in rows.sort(["subject", "indicator"]).iter_rows(named=True):
        out.setdefault(str(row["subject"]), {})[str(row["indicator"])] = row
    return out


def queue_chart(ctx: Context, results: pl.DataFrame) -> Chart | None:
    """p50, p95 and the longest wait per queue, in hours, with the p95 objective as a mark."""
    rows = results.filter(pl.col("indicator").is_in(QUEUE_SERIES))
    if rows.filter(pl.col("value").is_not_null()).is_empty():
        return None
    subjects = _by_subject(rows)
    names = sorted(subjects)
    series = tuple(
        Series(Term("indicator", ind), tuple(_scaled(subjects[q].get(ind, {}).get("value"), HOUR) for q in names))
        for ind in QUEUE_SERIES
    )
    reference = tuple(_scaled(subjects[q].get("queue_wait_p95", {}).get("objective"), HOUR) for q in names)
    categories: tuple[Cell, ...] = tuple(ctx.subject("queue", q) for q in names)
    note = _results_evidence(ctx, rows, "subject_kind=queue indicator=" + ",".join(QUEUE_SERIES))
    return Chart("queue_wait", "bars", categories, series, reference, note=note)


def latency_chart(ctx: Context, results: pl.DataFrame) -> Chart | None:
    """Latency p95 and p99 per service, in seconds, with the p99 objective as a mark."""
    rows = results.filter(pl.col("indicator").is_in(SERVICE_SERIES))
    if rows.filter(pl.col("value").is_not_null()).is_empty():
        return None
    subjects = _by_subject(rows)
    names = sorted(subjects)
    series = tuple(
        Series(Term("indicator", ind), tuple(_num(subjects[s].get(ind, {}).get("value")) for s in names))
        for ind in SERVICE_SERIES
    )
    reference = tuple(_num(subjects[s].get("latency_p99", {}).get("objective")) for s in names)
    categories: tuple[Cell, ...] = tuple(ctx.subject("service", s) for s in names)
    note = _results_evidence(ctx, rows, "subject_kind=service indicator=" + ",".join(SERVICE_SERIES))
    return Chart("latency", "bars", categories, series, reference, note=note)


def team_share_chart(ctx: Context, usage: pl.DataFrame) -> Chart | None:
    """Each team's share of the pool's GPU-hours next to the share it is entitled to."""
    total = _num(usage.select(nullable_sum("gpu_hours")).item())
    if total is None or total <= 0:
        return None
    teams = usage.group_by("team").agg(nullable_sum("gpu_hours")).sort(
        ["gpu_hours", "team"], descending=[True, False], nulls_last=True
    )
    keys = [str(t) for t in teams["team"].to_list()]
    used = tuple(ratio(_num(v), total) for v in teams["gpu_hours"].to_list())
    entitled = tuple(t.entitled_share if (t := ctx.config.teams.get(k)) else None for k in keys)
    series = (Series(Term("col", "share_of_pool"), used), Series(Term("col", "entitled_share"), entitled))
    clusters = sorted({str(c) for c in usage["cluster"].to_list() if c is not None})
    coverage = overall_coverage(ctx.frame("completeness"), "jobs", clusters)
    note = ctx.notes.ref(Evidence("usage", usage.height, coverage, Message("evidence.usage_by_team")))
    categories: tuple[Cell, ...] = tuple(ctx.team(k) for k in keys)
    return Chart("team_share", "bars", categories, series, percent=True, note=note)


def scenario_chart(ctx: Context, usage: pl.DataFrame) -> Chart | None:
    """Allocated GPU-hours by scenario."""
    scenarios = usage.group_by("scenario").agg(nullable_sum("gpu_hours")).sort(
        ["gpu_hours", "scenario"], descending=[True, False], nulls_last=True
    )
    values = tuple(_num(v) for v in scenarios["gpu_hours"].to_list())
    if not any(v for v in values):
        return None
    clusters = sorted({str(c) for c in usage["cluster"].to_list() if c is not None})
    coverage = overall_coverage(ctx.frame("completeness"), "jobs", clusters)
    note = ctx.notes.ref(Evidence("usage", usage.height, coverage, None,
                                       stored_evidence.encode([stored_evidence.part("by_scenario")])))
    categories: tuple[Cell, ...] = tuple(Term("scenario", str(s)) for s in scenarios["scenario"].to_list())
    return Chart("gpu_hours_by_scenario", "bars", categories, (Series(Term("col", "gpu_hours"), values),), note=note)


def idle_chart(ctx: Context, idle: pl.DataFrame, covered: float | None) -> Chart | None:
    """Busy, idle, idle-held and no-data GPU-hours per team, stacked."""
    parts = ("busy_minutes", "idle_minutes", "idle_held_minutes", "no_data_minutes")
    teams = idle.group_by("team").agg(nullable_sum(*parts)).with_columns(
        pl.sum_horizontal(pl.col("idle_minutes"), pl.col("idle_held_minutes")).alias("wasted")
    ).sort(["wasted", "team"], descending=[True, False], nulls_last=True)
    if teams.is_empty():
        return None
    labels = ("busy", "idle", "idle_held", "no_data")
    series = tuple(
        Series(Term("col", label), tuple(_scaled(v, 60) for v in teams[part].to_list()))
        for label, part in zip(labels, parts, strict=True)
    )
    note = ctx.notes.ref(Evidence("idle_by_job", idle.height, covered, None,
                                       stored_evidence.encode([stored_evidence.part("per_team")])))
    categories: tuple[Cell, ...] = tuple(ctx.team(str(t)) for t in teams["team"].to_list())
    return Chart("idle_by_team", "stacked", categories, series, note=note)


def _at_most_one(value: float | None) -> float | None:
    return None if value is None else min(1.0, value)


def _days(ctx: Context, daily: pl.DataFrame) -> list[date]:
    """Every day of the month up to the last day with data (a month in progress stops there)."""
    last = daily["day"].max()
    if not isinstance(last, date):
        return []
    first = ctx.month.start.astimezone(ctx.month.zone).date()
    return [first + timedelta(days=i) for i in range((last - first).days + 1)]


def daily_charts(ctx: Context, daily: pl.DataFrame) -> tuple[Chart, ...]:
    """Allocated GPU-hours per day by scenario and, where telemetry exists, the mean utilisation while allocated.

    A day without job records holding GPUs is 0 GPU-hours; a day without telemetry has no utilisation
    (a gap in the line), never 0.
    """
    days = _days(ctx, daily)
    if not days:
        return ()
    per = daily.group_by("day", "scenario").agg(
        *nullable_sum("gpu_hours", "util_minutes"),
        (pl.col("util_mean") * pl.col("util_minutes")).sum().alias("_util_sum"),
    )
    order = per.group_by("scenario").agg(nullable_sum("gpu_hours")).sort(
        ["gpu_hours", "scenario"], descending=[True, False], nulls_last=True
    )
    scenarios = [str(s) for s in order["scenario"].to_list()]
    hours: dict[tuple[date, str], float] = {}
    util: dict[tuple[date, str], float] = {}
    for row in per.iter_rows(named=True):
        key = (row["day"], str(row["scenario"]))
        hours[key] = float(row["gpu_hours"] or 0.0)
        if row["util_minutes"]:
            util[key] = float(row["_util_sum"]) / float(row["util_minutes"])
    categories: tuple[Cell, ...] = tuple(Text(str(d.day)) for d in days)
    clusters = sorted({str(c) for c in ctx.frame("usage")["cluster"].to_list() if c is not None})
    coverage = overall_coverage(ctx.frame("completeness"), "jobs", clusters)
    note = ctx.notes.ref(Evidence("daily_usage", daily.height, coverage, Message("evidence.daily_by_scenario")))
    charts = [
        Chart(
            "daily_gpu_hours",
            "lines",
            categories,
            tuple(Series(Term("scenario", s), tuple(hours.get((d, s), 0.0) for d in days)) for s in scenarios),
            note=note,
        )
    ]
    if util:
        allocated = sum(hours.values()) * 60.0
        measured = float(per["util_minutes"].sum() or 0)
        measured_rows = daily.filter(pl.col("util_minutes") > 0).height
        util_note = ctx.notes.ref(Evidence(
            "daily_usage", measured_rows, _at_most_one(ratio(measured, allocated)),
            Message("evidence.daily_utilisation"),
        ))
        series = tuple(
            Series(Term("scenario", s), tuple(util.get((d, s)) for d in days))
            for s in scenarios
            if any((d, s) in util for d in days)
        )
        charts.append(Chart("daily_utilisation", "lines", categories, series, percent=True, note=util_note))
    return tuple(charts)
