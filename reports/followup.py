"""The `applied` section: whether last month's applied quota changes moved the metric they targeted.

The assessment itself is `sla.followup.assess` (pure); the caller passes the applied changes
(`warehouse.quota_store.applied_changes`) and the earlier months, whose results are the baselines.
With no change applied in the month before, the section says nothing was applied. Below the table, the
replay's prediction for the teams and queues each applied plan targeted stands beside the month's
measurement, with the calibration error (`sla.followup.replay_checks`).
"""

from __future__ import annotations

from gpusteward import evidence as stored_evidence
from reports.context import Context
from reports.evidence import Evidence
from reports.model import Block, Cell, Column, Message, Moment, Quantity, Row, Section, Table, Term, Text
from reports.plan_text import phrases
from sla.followup import Assessment, assess, replay_checks


def _limit(value: int | None) -> Quantity | Term:
    return Term("common", "unlimited") if value is None else Quantity(value, "gpus")


def _outcome(a: Assessment) -> Term:
    return Term("applied", a.verdict if a.verdict != "no_data" else (a.why or "no_value"))


def _row(ctx: Context, a: Assessment) -> Row:
    c = a.change
    indicator = a.indicator
    cells: tuple[Cell, ...] = (
        Text(c.cluster or "—"),
        ctx.team(c.team),
        Text(c.name),
        _limit(c.before),
        _limit(c.after),
        Moment(c.applied_at),
        ctx.subject(a.subject_kind, a.subject) if a.subject is not None else Term("common", "none"),
        Term("indicator", indicator) if indicator is not None else Term("common", "none"),
        ctx.value(indicator, a.before) if indicator is not None else Term("common", "none"),
        ctx.value(indicator, a.after) if indicator is not None else Term("common", "none"),
        ctx.objective(indicator, a.objective) if indicator is not None else Term("common", "none"),
        _outcome(a),
        phrases(c.expected_effect) if c.expected_effect else Text("—"),
    )
    parts = [stored_evidence.part("applied", plan=f"plan={c.plan_id}", apply=f"apply={c.apply_id}",
                                  change=f"{c.kind}={c.name}", by=c.applied_by)]
    if c.approved_by:
        parts.append(stored_evidence.part("approved_by", by=c.approved_by))
    parts.append(stored_evidence.part("baseline", baseline=str(a.baseline)))
    pointer = stored_evidence.encode(parts)
    return Row(cells, ctx.notes.ref(Evidence("quota_applies", 1, None, None, pointer)))


def build_applied(ctx: Context) -> Section:
    """One row per target metric of each change applied in the month before the review month."""
    assessed = assess(ctx.month, ctx.frame("results"), ctx.applied, ctx.history)
    if not assessed:
        return Section("applied", unavailable=Message("reason.nothing_applied"))
    changes = {(a.change.apply_id, a.change.cluster, a.change.kind, a.change.name) for a in assessed}
    counts = {v: sum(1 for a in assessed if a.verdict == v) for v in ("moved", "not_moved", "no_data")}
    intro = Message(
        "applied.intro",
        (
            ("count", Quantity(len(changes), "count")),
            ("moved", Quantity(counts["moved"], "count")),
            ("not_moved", Quantity(counts["not_moved"], "count")),
            ("no_data", Quantity(counts["no_data"], "count")),
        ),
    )
    columns = (
        Column("col.cluster"),
        Column("col.team"),
        Column("col.name"),
        Column("col.limit_before", numeric=True),
        Column("col.limit_after", numeric=True),
        Column("col.applied_at"),
        Column("col.subject"),
        Column("col.indicator"),
        Column("col.before_change", numeric=True),
        Column("col.this_month", numeric=True),
        Column("col.objective", numeric=True),
        Column("col.outcome"),
        Column("col.expected_effect"),
    )
    blocks: tuple[Block, ...] = (intro, Table(columns, tuple(_row(ctx, a) for a in assessed)))
    return Section("applied", blocks + replay_blocks(ctx))


def replay_blocks(ctx: Context) -> tuple[Block, ...]:
    """The replay's prediction for what each applied plan targeted, beside this month's measurement."""
    checks = replay_checks(ctx.month, ctx.applied, ctx.frame("plan_replay"))
    if not checks:
        return ()
    rows = tuple(Row((
        Text(c.plan_id), Text(c.cluster), Term("replay_group", c.group), Text(c.subject),
        Quantity(c.observed_before, "duration"), Quantity(c.replay_before, "duration"),
        Quantity(c.error, "duration"), Quantity(c.predicted, "duration"), Quantity(c.measured, "duration"),
        Quantity(c.gap, "duration"), Term("applied.replay", c.verdict),
    )) for c in checks)
    columns = (
        Column("col.plan"), Column("col.cluster"), Column("col.replay_group"), Column("col.subject"),
        Column("col.before_change", numeric=True), Column("col.replay_p95", numeric=True),
        Column("col.replay_error", numeric=True), Column("col.predicted_p95", numeric=True),
        Column("col.measured_p95", numeric=True), Column("col.prediction_gap", numeric=True), Column("col.outcome"),
    )
    return (Message("applied.replay.intro"), Table(columns, rows))
