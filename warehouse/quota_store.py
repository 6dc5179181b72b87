"""Quota plan state and the apply audit trail (migration 007), as typed functions over the warehouse.

Approvals and rejections are `control_actions` rows (`warehouse.control`); every apply, dry run and
rollback is one `quota_applies` row with its `quota_apply_changes` (before, requested, after per
limit). A plan's state is derived from those rows, never stored twice.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from sla.followup import AppliedChange
from warehouse import control
from warehouse.sql import run, scalar, transaction
from warehouse.store import Warehouse

ApplyAction = Literal["apply", "dry-run", "rollback"]
PlanState = Literal["proposed", "approved", "rejected", "applied", "rolled-back"]


@dataclass(frozen=True)
class Decision:
    plan_id: str
    decision: Literal["approved", "rejected"]
    decided_by: str
    decided_at: datetime
    override: str | None = None  # why a plan flagged by its replay was approved anyway


@dataclass(frozen=True)
class ChangeRecord:
    """One limit in one apply: what the plan expected, what was asked, what was read before and after."""

    seq: int
    cluster: str | None
    kind: str
    name: str
    expected: int | None
    requested: int | None
    before: int | None
    after: int | None
    outcome: str
    detail: str = ""


@dataclass(frozen=True)
class ApplyRecord:
    """One attempt to write (or dry-run, or roll back) a plan: who, when, through what, and the result."""

    apply_id: str
    plan_id: str
    action: ApplyAction
    actor: str
    approved_by: str | None
    approved_at: datetime | None
    started_at: datetime
    finished_at: datetime
    transport: str
    result: str
    detail: str
    changes: tuple[ChangeRecord, ...] = ()


def _naive(moment: datetime | None) -> datetime | None:
    if moment is None:
        return None
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def plan_body(wh: Warehouse, plan_id: str) -> dict[str, Any] | None:
    """The stored plan as JSON data (`quota.plan.Plan.from_dict` reads it), or None."""
    body = scalar(wh.connection, "SELECT body FROM quota_plans WHERE plan_id = ?", [plan_id])
    return None if body is None else dict(json.loads(body))


def decision(wh: Warehouse, plan_id: str) -> Decision | None:
    """The plan's approval or rejection (the latest control action on it), or None."""
    rows = control.plan_decisions(wh).filter(plan_id=plan_id)
    if rows.height == 0:
        return None
    r = rows.row(0, named=True)
    return Decision(r["plan_id"], r["decision"], r["decided_by"], r["decided_at"], r.get("override"))


def record_apply(wh: Warehouse, record: ApplyRecord) -> None:
    """Store one apply attempt and its changes in one transaction."""
    con = wh.connection
    with transaction(con):
        attempt = scalar(
            con, "SELECT coalesce(max(attempt), 0) + 1 FROM quota_applies WHERE plan_id = ?", [record.plan_id]
        )
        run(
            con,
            "INSERT INTO quota_applies VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                record.apply_id,
                record.plan_id,
                attempt,
                record.action,
                record.actor,
                record.approved_by,
                _naive(record.approved_at),
                _naive(record.started_at),
                _naive(record.finished_at),
                record.transport,
                record.result,
                record.detail,
            ],
        )
        for c in record.changes:
            run(
                con,
                "INSERT INTO quota_apply_changes VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    record.apply_id,
                    c.seq,
                    c.cluster,
                    c.kind,
                    c.name,
                    c.expected,
                    c.requested,
                    c.before,
                    c.after,
                    c.outcome,
                    c.detail,
                ],
            )


def applies(wh: Warehouse, plan_id: str | None = None) -> list[ApplyRecord]:
    """Apply attempts, oldest first (of one plan, or of all)."""
    con = wh.connection
    where, params = ("WHERE plan_id = ?", [plan_id]) if plan_id is not None else ("", [])
    heads = run(con, f"SELECT * FROM quota_applies {where} ORDER BY started_at, attempt", params)  # noqa: S608 - fixed text
    found: list[ApplyRecord] = []
    for h in heads:
        rows = run(con, "SELECT * FROM quota_apply_changes WHERE apply_id = ? ORDER BY seq", [h[0]])
        changes = tuple(ChangeRecord(*r[1:]) for r in rows)
        found.append(
            ApplyRecord(
                apply_id=h[0],
                plan_id=h[1],
                action=h[3],
                actor=h[4],
                approved_by=h[5],
                approved_at=h[6],
                started_at=h[7],
                finished_at=h[8],
                transport=h[9],
                result=h[10],
                detail=h[11],
                changes=changes,
            )
        )
    return found


def last_applied(wh: Warehouse, plan_id: str) -> ApplyRecord | None:
    """The plan's apply that is in force: its latest successful apply not rolled back since."""
    return in_force(applies(wh, plan_id))


def in_force(records: list[ApplyRecord]) -> ApplyRecord | None:
    """Of a plan's records (oldest first), the successful apply not followed by a successful rollback."""
    current: ApplyRecord | None = None
    for r in records:
        if r.action == "apply" and r.result == "applied":
            current = r
        elif r.action == "rollback" and r.result == "rolled-back":
            current = None
    return current


def plan_state(wh: Warehouse, plan_id: str) -> PlanState:
    """proposed, approved or rejected (control actions), then applied or rolled-back (apply records)."""
    records = applies(wh, plan_id)
    if in_force(records) is not None:
        return "applied"
    if any(r.action == "rollback" and r.result == "rolled-back" for r in records):
        return "rolled-back"
    made = decision(wh, plan_id)
    return "proposed" if made is None else made.decision


def applied_changes(wh: Warehouse) -> list[AppliedChange]:
    """Every limit a successful apply wrote, with its plan item's reason and expected effect, and when
    (if ever) a successful rollback of that plan undid it; oldest first. The review's follow-up reads it."""
    records = applies(wh)
    by_plan: dict[str, list[ApplyRecord]] = {}
    for r in records:
        by_plan.setdefault(r.plan_id, []).append(r)
    found: list[AppliedChange] = []
    for plan_id, history in by_plan.items():
        body = plan_body(wh, plan_id) or {}
        items = body.get("items") or []
        replay = tuple(r for r in body.get("replay") or () if isinstance(r, dict))
        for n, r in enumerate(history):
            if r.action != "apply" or r.result != "applied":
                continue
            undone = next(
                (later.finished_at for later in history[n + 1 :] if later.action == "rollback"
                 and later.result == "rolled-back"),
                None,
            )
            for c in r.changes:
                if c.outcome != "written":
                    continue
                item = _item_of(items, c)
                found.append(AppliedChange(
                    plan_id=plan_id, apply_id=r.apply_id, cluster=c.cluster, kind=c.kind, name=c.name,
                    team=item.get("team"), before=c.before, after=c.after, applied_at=r.finished_at,
                    applied_by=r.actor, approved_by=r.approved_by, reason=str(item.get("reason") or ""),
                    expected_effect=str(item.get("expected_effect") or ""), rolled_back_at=undone,
                    evidence=str(item.get("evidence") or ""), replay=replay,
                ))
    return sorted(found, key=lambda a: (a.applied_at, a.plan_id, a.cluster or "", a.kind, a.name))


def _item_of(items: list[dict[str, Any]], change: ChangeRecord) -> dict[str, Any]:
    """The plan item a change wrote: the one at its position when it matches, else by cluster, kind and name."""
    def same(item: dict[str, Any]) -> bool:
        return (item.get("kind"), item.get("name")) == (change.kind, change.name) and (
            change.cluster is None or item.get("cluster") == change.cluster
        )

    if 0 < change.seq <= len(items) and same(items[change.seq - 1]):
        return items[change.seq - 1]
    return next((i for i in items if same(i)), {})


@dataclass(frozen=True)
class WarehouseQuotaStore:
    """The store `quota.workflow` needs, over one open warehouse."""

    wh: Warehouse

    def plan_body(self, plan_id: str) -> dict[str, Any] | None:
        return plan_body(self.wh, plan_id)

    def decision(self, plan_id: str) -> Decision | None:
        return decision(self.wh, plan_id)

    def applies(self, plan_id: str) -> list[ApplyRecord]:
        return applies(self.wh, plan_id)

    def record_apply(self, record: ApplyRecord) -> None:
        record_apply(self.wh, record)
