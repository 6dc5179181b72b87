"""SLA compliance per scenario, queue wait per queue and inference latency per service (SLA_RESULTS)."""

from __future__ import annotations

from typing import Any

import polars as pl

from gpusteward.domain import Scenario
from gpusteward.indicators import INDICATORS
from reports.arrays import array_blocks
from reports.context import Context
from reports.figures import latency_chart, queue_chart
from reports.findings import sla_evidence
from reports.model import Block, Cell, Column, Heading, Message, Quantity, Row, Section, Table, Term, Verdict
from reports.objectives import objectives_table
from sla.capacity import NEAR_CAPACITY, near_capacity

_SCENARIO_ORDER = {s.value: i for i, s in enumerate(Scenario)}
_INDICATOR_ORDER = {name: i for i, name in enumerate(INDICATORS)}
QUEUE_INDICATORS = ("queue_wait_p50", "queue_wait_p95", "queue_wait_max")
SERVICE_INDICATORS = ("latency_p95", "latency_p99", "ttft_p99", "error_rate")


def verdict(row: dict[str, Any]) -> Verdict:
    if row["met"] is not None:
        return Verdict(bool(row["met"]))
    return Verdict(None, "no_data" if row["value"] is None and row["objective"] is not None else "no_objective")


def _sorted(results: pl.DataFrame) -> list[dict[str, Any]]:
    rows = results.to_dicts()
    rows.sort(key=lambda r: (
        _SCENARIO_ORDER.get(r["scenario"], len(_SCENARIO_ORDER)), str(r["scenario"]),
        str(r["subject_kind"]), str(r["subject"]),
        _INDICATOR_ORDER.get(r["indicator"], len(_INDICATOR_ORDER)), str(r["indicator"]),
    ))
    return rows


def _result_row(ctx: Context, row: dict[str, Any], *, with_subject: bool = True) -> Row:
    cells: tuple[Cell, ...] = (
        Term("indicator", row["indicator"]),
        ctx.value(row["indicator"], row["value"]),
        ctx.objective(row["indicator"], row["objective"]),
        verdict(row),
    )
    if with_subject:
        cells = (ctx.subject(row["subject_kind"], row["subject"]), *cells)
    return Row(cells, ctx.notes.ref(sla_evidence(row)))


_RESULT_COLUMNS = (
    Column("col.indicator"),
    Column("col.value", numeric=True),
    Column("col.objective", numeric=True),
    Column("col.met"),
)


def build_sla(ctx: Context) -> Section:
    reason = ctx.unavailable("results")
    if reason is not None:
        return Section("sla", unavailable=reason)
    results = ctx.frame("results")
    met = results.filter(pl.col("met").eq(True)).height
    missed = results.filter(pl.col("met").eq(False)).height
    blocks: list[Block] = [
        Message("sla.counts", (
            ("met", Quantity(met, "count")),
            ("missed", Quantity(missed, "count")),
            ("unjudged", Quantity(results.height - met - missed, "count")),
        )),
        *objectives_table(ctx, results),
    ]
    scenario: str | None = None
    rows: list[Row] = []
    for row in _sorted(results):
        if row["scenario"] != scenario:
            if rows:
                blocks.append(Table((Column("col.subject"), *_RESULT_COLUMNS), tuple(rows)))
                rows = []
            scenario = row["scenario"]
            blocks.append(Heading(Term("scenario", scenario)))
        rows.append(_result_row(ctx, row))
    blocks.append(Table((Column("col.subject"), *_RESULT_COLUMNS), tuple(rows)))
    return Section("sla", tuple(blocks))


def build_queues(ctx: Context) -> Section:
    reason = ctx.unavailable("results")
    if reason is not None:
        return Section("queues", unavailable=reason)
    results = ctx.frame("results").filter(
        (pl.col("subject_kind") == "queue") & pl.col("indicator").is_in(QUEUE_INDICATORS)
    )
    if results.is_empty():
        return Section("queues", unavailable=Message("reason.no_queue_results"))
    rows: list[Row] = []
    for (subject, scenario), group in sorted(results.group_by(["subject", "scenario"]), key=lambda g: str(g[0])):
        by = {r["indicator"]: r for r in group.to_dicts()}
        p95 = by.get("queue_wait_p95")
        lead = p95 or next(iter(by.values()))
        cells: tuple[Cell, ...] = (
            ctx.subject("queue", str(subject)),
            Term("scenario", str(scenario)),
            *(ctx.value(i, by[i]["value"] if i in by else None) for i in QUEUE_INDICATORS),
            ctx.objective("queue_wait_p95", p95["objective"] if p95 else None),
            verdict(p95) if p95 else Verdict(None, "no_data"),
        )
        rows.append(Row(cells, ctx.notes.ref(sla_evidence(lead))))
    columns = (
        Column("col.queue"),
        Column("col.scenario"),
        Column("col.p50", numeric=True),
        Column("col.p95", numeric=True),
        Column("col.longest", numeric=True),
        Column("col.objective_p95", numeric=True),
        Column("col.met"),
    )
    blocks: list[Block] = [Message("queues.intro"), Table(columns, tuple(rows))]
    if (chart := queue_chart(ctx, results)) is not None:
        blocks.append(chart)
    blocks += array_blocks(ctx)
    return Section("queues", tuple(blocks))


def build_latency(ctx: Context) -> Section:
    reason = ctx.unavailable("results")
    if reason is not None:
        return Section("latency", unavailable=reason)
    results = ctx.frame("results").filter(
        (pl.col("subject_kind") == "service") & pl.col("indicator").is_in(SERVICE_INDICATORS)
    )
    if results.is_empty():
        return Section("latency", unavailable=Message("reason.no_service_results"))
    rows = tuple(_result_row(ctx, row) for row in _sorted(results))
    columns = (Column("col.service"), *_RESULT_COLUMNS)
    blocks: list[Block] = [Message("latency.intro"), Table(columns, rows)]
    if (chart := latency_chart(ctx, results)) is not None:
        blocks.append(chart)
    blocks += capacity_blocks(ctx)
    return Section("latency", tuple(blocks))


def capacity_blocks(ctx: Context) -> list[Block]:
    """Services near capacity: headroom below its objective (else NEAR_CAPACITY), with replicas and GPUs."""
    results = ctx.frame("results").filter(pl.col("subject_kind") == "service")
    if results.filter(pl.col("indicator") == "capacity_headroom").is_empty():
        return []
    near = near_capacity(results)
    limit = Quantity(NEAR_CAPACITY, "percent")
    if near.is_empty():
        return [Message("latency.capacity_none", (("limit", limit),))]
    by = {(r["subject"], r["indicator"]): r for r in results.to_dicts()}
    rows: list[Row] = []
    for row in near.to_dicts():
        replicas = by.get((row["subject"], "replicas"))
        gpus = by.get((row["subject"], "gpus_serving"))
        rows.append(Row((
            ctx.subject("service", row["subject"]),
            Quantity(replicas["value"] if replicas else None, "number"),
            Quantity(gpus["value"] if gpus else None, "gpus"),
            Quantity(row["value"], "percent"),
            Quantity(row["objective"] if row["objective"] is not None else NEAR_CAPACITY, "percent", "at_least"),
        ), ctx.notes.ref(sla_evidence(row))))
    columns = (
        Column("col.service"),
        Column("col.replicas", numeric=True),
        Column("col.gpus_serving", numeric=True),
        Column("col.headroom", numeric=True),
        Column("col.objective", numeric=True),
    )
    return [
        Message("latency.capacity_intro", (("count", Quantity(near.height, "count")), ("limit", limit))),
        Table(columns, tuple(rows)),
    ]
