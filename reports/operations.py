"""Protection-line breaches, recommended quota changes (dry run) and data completeness."""

from __future__ import annotations

from reports.accounts import account_blocks
from reports.context import Context
from reports.data_text import evidence_phrases
from reports.evidence import Evidence, ratio
from reports.findings import line_kind
from reports.model import Block, Cell, Column, Message, Moment, Quantity, Row, Section, Table, Term, Text
from reports.plan_text import decode, phrases, replay_tables
from sla.protection_episodes import review_episodes


def build_breaches(ctx: Context) -> Section:
    reason = ctx.unavailable("episodes")
    episodes = ctx.frame("episodes")
    if reason is not None and not (reason.key == "reason.empty" and episodes.is_empty()):
        return Section("breaches", unavailable=reason)
    if episodes.is_empty():
        if not ctx.config.protection.inference_reserve:
            return Section("breaches", (Message("breaches.no_lines"),))
        if ctx.unavailable("completeness") is not None:
            return Section("breaches", unavailable=Message("reason.no_telemetry"))
        return Section("breaches", (Message("breaches.none"),))
    # One row per episode: a line's alerts on one subject grouped by the line's episode_gap.
    episodes = review_episodes(episodes, ctx.config)
    rows: list[Row] = []
    for row in episodes.sort(["start", "line", "subject"], nulls_last=True).iter_rows(named=True):
        kind = line_kind(row["line"])
        minutes = row["minutes"]
        cells: tuple[Cell, ...] = (
            Term("line", row["line"]),
            Text(str(row["subject"])),
            Moment(row["start"]),
            Quantity(minutes * 60 if minutes is not None else None, "duration"),
            Quantity(row["alerts"], "count"),
            Quantity(row["worst_value"], kind),
            Quantity(row["threshold"], kind),
            Term("severity", row["severity"]),
            ctx.fallback(str(row["line"]), str(row["subject"]), row["fallback"]),
        )
        coverage = ctx.gpu_coverage.get(str(row["subject"]))
        ev = Evidence("breach_episodes", row["alerts"], coverage, None, row["evidence"] or "")
        rows.append(Row(cells, ctx.notes.ref(ev)))
    columns = (
        Column("col.line"),
        Column("col.subject"),
        Column("col.start"),
        Column("col.duration", numeric=True),
        Column("col.alerts", numeric=True),
        Column("col.worst", numeric=True),
        Column("col.threshold", numeric=True),
        Column("col.severity"),
        Column("col.fallback"),
    )
    intro = Message("breaches.intro", (("count", Quantity(episodes.height, "count")),))
    return Section("breaches", (intro, Table(columns, tuple(rows))))


def build_quota(ctx: Context) -> Section:
    reason = ctx.unavailable("plan_items")
    items = ctx.frame("plan_items")
    if reason is not None and not (reason.key == "reason.empty" and items.is_empty()):
        return Section("quota", unavailable=reason)
    blocks: list[Block] = [Message("quota.dry_run")]
    if items.is_empty():
        blocks.append(Message("quota.none"))
        return Section("quota", tuple(blocks + account_blocks(ctx)))
    rows: list[Row] = []
    for row in items.sort(["cluster", "team", "kind", "name"], nulls_last=True).iter_rows(named=True):
        current = row["current_gpus"]
        cells: tuple[Cell, ...] = (
            Text(str(row["cluster"])),
            ctx.team(row["team"]),
            Term("quota_kind", row["kind"]),
            Text(str(row["name"])),
            (Quantity(current, "gpus") if current is not None else Term("common", "unlimited"))
            if row["kind"] != "advice" else Text(""),
            Quantity(row["proposed_gpus"], "gpus") if row["proposed_gpus"] is not None else Text(""),
            phrases(row["reason"]),
            phrases(row["expected_effect"]),
        )
        detail = Message("quota.evidence", (("lines", phrases(row["evidence"], "list")),))
        ev = Evidence("quota_plan_items", None, None, detail, f"plan={row['plan_id']}")
        rows.append(Row(cells, ctx.notes.ref(ev)))
    columns = (
        Column("col.cluster"),
        Column("col.team"),
        Column("col.kind"),
        Column("col.name"),
        Column("col.current", numeric=True),
        Column("col.proposed", numeric=True),
        Column("col.reason"),
        Column("col.expected_effect"),
    )
    blocks.append(Table(columns, tuple(rows)))
    return Section("quota", tuple(blocks + replay_blocks(ctx) + account_blocks(ctx)))


def replay_blocks(ctx: Context) -> list[Block]:
    """The plan's whole replay, per cluster, team and queue: observed, replayed under the current limits
    (with the calibration error) and replayed under the plan; each item's effect is its share of it."""
    blocks: list[Block] = []
    flags = ctx.frame("plan_protected")
    if not flags.is_empty():
        blocks.append(Message("quota.protected.title"))
        blocks += [m for text in flags["message"].to_list() for m in decode(text)]
    tables = replay_tables(ctx.frame("plan_replay").to_dicts())
    if tables is not None:
        blocks += [Message("quota.replay.intro"), *tables]
    return blocks


def build_completeness(ctx: Context) -> Section:
    reason = ctx.unavailable("completeness")
    if reason is not None:
        return Section("completeness", unavailable=reason)
    rows: list[Row] = []
    for row in ctx.frame("completeness").sort(["source", "cluster"], nulls_last=True).iter_rows(named=True):
        cells: tuple[Cell, ...] = (
            Term("source", row["source"]),
            Text(str(row["cluster"])),
            Quantity(row["expected"], "count"),
            Quantity(row["present"], "count"),
            Quantity(row["missing"], "count"),
            Quantity(ratio(row["present"], row["expected"]), "percent"),
            evidence_phrases(row["detail"]) if row["detail"] else Text("—"),
        )
        rows.append(Row(cells))
    columns = (
        Column("col.source"),
        Column("col.cluster"),
        Column("col.expected", numeric=True),
        Column("col.present", numeric=True),
        Column("col.missing", numeric=True),
        Column("col.completeness", numeric=True),
        Column("col.detail"),
    )
    return Section("completeness", (Message("completeness.honest"), Table(columns, tuple(rows))))
