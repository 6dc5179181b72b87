"""Sections whose data comes from more than one month, or not yet from any producer.

- `trend`: SLA compliance per scenario in this month and the earlier months the caller passed.
- `failures`: success rate per queue from SLA_RESULTS, then the failed job records (FAILURES) by
  scenario and team, by cause (node failure, time limit, out of memory, abort, other signal, exit
  error: from the state and the exit code and signal), and the job names that failed most with
  their queue and final states.
- `preemption`: preemptions, lost GPU-hours and recovery time per queue from SLA_RESULTS (the
  evaluator's preemption indicators); not available when the month has none.
"""

from __future__ import annotations

import polars as pl

from gpusteward.domain import Scenario
from reports.context import Context
from reports.evidence import Evidence, overall_coverage
from reports.findings import sla_evidence
from reports.model import Block, Cell, Column, Message, Quantity, Row, Section, Table, Term, Text
from sla.outputs import MonthOutputs

TREND_MONTHS = 6
_SCENARIO_ORDER = {s.value: i for i, s in enumerate(Scenario)}


def _usable_results(outputs: MonthOutputs) -> pl.DataFrame | None:
    frame = getattr(outputs, "results", None)
    if not isinstance(frame, pl.DataFrame) or any(n not in frame.columns for n in ("scenario", "met", "rows")):
        return None
    return frame


def build_trend(ctx: Context) -> Section:
    """Met / missed / not judged per scenario and month, newest month last."""
    reason = ctx.unavailable("results")
    if reason is not None:
        return Section("trend", unavailable=reason)
    months: dict[str, pl.DataFrame] = {}
    for earlier in ctx.history:
        frame = _usable_results(earlier)
        if frame is not None and earlier.month < ctx.month:
            months[str(earlier.month)] = frame
    months[str(ctx.month)] = ctx.frame("results")
    chosen = sorted(months)[-TREND_MONTHS:]
    blocks: list[Block] = []
    if len(chosen) == 1:
        blocks.append(Message("trend.no_history"))
    else:
        blocks.append(Message("trend.intro", (("count", Quantity(len(chosen), "count")),)))
    rows: list[Row] = []
    scenarios = sorted(
        {str(s) for m in chosen for s in months[m]["scenario"].to_list() if s is not None},
        key=lambda s: (_SCENARIO_ORDER.get(s, len(_SCENARIO_ORDER)), s),
    )
    for scenario in scenarios:
        for month in chosen:
            group = months[month].filter(pl.col("scenario") == scenario)
            if group.is_empty():
                continue
            met = group.filter(pl.col("met").eq(True)).height
            missed = group.filter(pl.col("met").eq(False)).height
            cells: tuple[Cell, ...] = (
                Term("scenario", scenario),
                Text(month),
                Quantity(met, "count"),
                Quantity(missed, "count"),
                Quantity(group.height - met - missed, "count"),
            )
            counted = [r for r in group["rows"].to_list() if r is not None]
            ev = Evidence("sla_results", sum(counted) if counted else None, None, None,
                          f"month={month} scenario={scenario}")
            rows.append(Row(cells, ctx.notes.ref(ev)))
    columns = (
        Column("col.scenario"),
        Column("col.month"),
        Column("col.met_count", numeric=True),
        Column("col.missed_count", numeric=True),
        Column("col.unjudged_count", numeric=True),
    )
    blocks.append(Table(columns, tuple(rows)))
    return Section("trend", tuple(blocks))


TOP_FAILING = 10
"""Job names listed in the failures section, most failed records first."""


def _success_rates(ctx: Context) -> list[Block]:
    if ctx.unavailable("results") is not None:
        return []
    rates = ctx.frame("results").filter(pl.col("indicator") == "success_rate").sort(["scenario", "subject"])
    if rates.is_empty():
        return []
    rows = []
    for row in rates.iter_rows(named=True):
        cells: tuple[Cell, ...] = (
            ctx.subject(row["subject_kind"], row["subject"]),
            Term("scenario", row["scenario"]),
            ctx.value("success_rate", row["value"]),
            ctx.objective("success_rate", row["objective"]),
        )
        rows.append(Row(cells, ctx.notes.ref(sla_evidence(row))))
    columns = (
        Column("col.subject"),
        Column("col.scenario"),
        Column("col.success_rate", numeric=True),
        Column("col.objective", numeric=True),
    )
    return [Table(columns, tuple(rows))]


def _states(group: pl.DataFrame) -> Text:
    """Final states with their record counts, most first: "FAILED 180, TIMEOUT 43"."""
    by = group.group_by("state").agg(pl.col("records").sum()).sort(["records", "state"], descending=[True, False])
    return Text(", ".join(f"{r['state']} {r['records']}" for r in by.iter_rows(named=True)))


def _failure_note(ctx: Context, group: pl.DataFrame, coverage: float | None, detail: Message | str) -> int:
    records = group["records"].sum()
    if isinstance(detail, Message):
        return ctx.notes.ref(Evidence("failures", int(records or 0), coverage, detail))
    return ctx.notes.ref(Evidence("failures", int(records or 0), coverage, None, detail))


def _failed_jobs(ctx: Context) -> list[Block]:
    """Failed records per scenario and team, then the job names that failed most, with queue and state."""
    if ctx.unavailable("failures") is not None:
        return []
    failed = ctx.frame("failures")
    clusters = sorted({str(q).split("/")[0] for q in failed["queue"].to_list() if q is not None})
    coverage = overall_coverage(ctx.frame("completeness"), "jobs", clusters)
    teams = (
        failed.group_by("scenario", "team")
        .agg(pl.col("records").sum())
        .sort(["records", "scenario", "team"], descending=[True, False, False])
    )
    rows: list[Row] = []
    for row in teams.iter_rows(named=True):
        group = failed.filter((pl.col("scenario") == row["scenario"]) & (pl.col("team") == row["team"]))
        cells: tuple[Cell, ...] = (
            Term("scenario", row["scenario"]),
            ctx.team(row["team"]),
            Quantity(row["records"], "count"),
            _states(group),
        )
        detail = Message("evidence.failed_records", (("scenario", Term("scenario", row["scenario"])),
                                                      ("team", ctx.team(row["team"]))))
        rows.append(Row(cells, _failure_note(ctx, group, coverage, detail)))
    by_team = Table(
        (Column("col.scenario"), Column("col.team"), Column("col.failed_records", numeric=True),
         Column("col.final_states")),
        tuple(rows),
    )
    top = failed.group_by("name", "queue", "scenario", "team").agg(pl.col("records").sum()).sort(
        ["records", "name", "queue", "scenario", "team"], descending=[True, False, False, False, False]
    ).head(TOP_FAILING)
    rows = []
    for row in top.iter_rows(named=True):
        group = failed.filter(
            (pl.col("name") == row["name"]) & (pl.col("queue") == row["queue"])
            & (pl.col("scenario") == row["scenario"]) & (pl.col("team") == row["team"])
        )
        cells = (
            Text(row["name"] or "?"),
            Text(str(row["queue"])),
            Term("scenario", row["scenario"]),
            ctx.team(row["team"]),
            Quantity(row["records"], "count"),
            _states(group),
        )
        pointer = f"name={row['name']} queue={row['queue']} team={row['team']}"
        rows.append(Row(cells, _failure_note(ctx, group, coverage, pointer)))
    top_table = Table(
        (Column("col.job_name"), Column("col.queue"), Column("col.scenario"), Column("col.team"),
         Column("col.failed_records", numeric=True), Column("col.final_states")),
        tuple(rows),
    )
    total = Quantity(int(failed["records"].sum() or 0), "count")
    return [
        Message("failures.by_team", (("records", total),)),
        by_team,
        *_by_cause(ctx, failed, coverage),
        Message("failures.top_jobs", (("count", Quantity(top.height, "count")),)),
        top_table,
    ]


def _by_cause(ctx: Context, failed: pl.DataFrame, coverage: float | None) -> list[Block]:
    """Failed records by cause (sla/failures.py: node, time limit, out of memory, abort, signal, exit
    error, unknown), most first, with their share and the team they hit most; nothing for months
    stored before causes were kept."""
    if "cause" not in failed.columns or failed["cause"].null_count() == failed.height:
        return []
    total = int(failed["records"].sum() or 0)
    causes = (
        failed.filter(pl.col("cause").is_not_null())
        .group_by("cause").agg(pl.col("records").sum())
        .sort(["records", "cause"], descending=[True, False])
    )
    rows: list[Row] = []
    for row in causes.iter_rows(named=True):
        group = failed.filter(pl.col("cause") == row["cause"])
        teams = group.group_by("team").agg(pl.col("records").sum()).sort(["records", "team"], descending=[True, False])
        cells: tuple[Cell, ...] = (
            Term("failure_cause", row["cause"]),
            Quantity(row["records"], "count"),
            Quantity(row["records"] / total if total else None, "percent"),
            ctx.team(teams["team"][0]),
            _states(group),
        )
        rows.append(Row(cells, _failure_note(ctx, group, coverage, f"cause={row['cause']}")))
    columns = (
        Column("col.failure_cause"),
        Column("col.failed_records", numeric=True),
        Column("col.share", numeric=True),
        Column("col.team_most"),
        Column("col.final_states"),
    )
    return [Message("failures.by_cause"), Table(columns, tuple(rows))]


def build_failures(ctx: Context) -> Section:
    """Success rate per queue where the evaluator produced one, then failed job records by scenario and team."""
    rates, jobs = _success_rates(ctx), _failed_jobs(ctx)
    if not rates and not jobs:
        return Section("failures", unavailable=Message("reason.no_failure_records"))
    if not jobs:
        jobs = [Message("failures.no_failed_records")]
    return Section("failures", tuple(rates + jobs))


PREEMPTION_INDICATORS = ("preemptions", "preemption_rate", "preempted_gpu_hours", "recovery_time_p95")


def build_preemption(ctx: Context) -> Section:
    """The preemption ledger summarised per queue from SLA results, largest loss of GPU-hours first."""
    reason = ctx.unavailable("results")
    if reason is not None:
        return Section("preemption", unavailable=reason)
    results = ctx.frame("results").filter(pl.col("indicator").is_in(PREEMPTION_INDICATORS))
    if results.is_empty():
        return Section("preemption", unavailable=Message("reason.no_preemption_ledger"))
    groups = []
    for (subject, scenario), group in results.group_by(["subject", "scenario"]):
        by = {r["indicator"]: r for r in group.to_dicts()}
        lost = by.get("preempted_gpu_hours", {}).get("value")
        groups.append((-(lost or 0.0), str(subject), str(scenario), by))
    rows: list[Row] = []
    for _, subject, scenario, by in sorted(groups):
        cells: tuple[Cell, ...] = (
            ctx.subject("queue", subject),
            Term("scenario", scenario),
            *(ctx.value(i, by[i]["value"] if i in by else None) for i in PREEMPTION_INDICATORS),
        )
        lead = by.get("preempted_gpu_hours") or next(iter(by.values()))
        rows.append(Row(cells, ctx.notes.ref(sla_evidence(lead))))
    columns = (
        Column("col.queue"),
        Column("col.scenario"),
        Column("col.preemptions", numeric=True),
        Column("col.preemption_rate", numeric=True),
        Column("col.lost_gpu_hours", numeric=True),
        Column("col.recovery_p95", numeric=True),
    )
    return Section("preemption", (Message("preemption.intro"), Table(columns, tuple(rows))))
