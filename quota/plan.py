"""Quota plans as data: they can be printed, stored, diffed and (in a later version) approved.

This version only proposes: every plan is a dry run and nothing is written to a scheduler.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import polars as pl

from sla.results import QUOTA_PLAN_ITEMS

PlanStatus = Literal["proposed"]
DRY_RUN_NOTE = "PROPOSED: nothing is written to a scheduler until approved and applied (`gpusteward quota apply`)."


@dataclass(frozen=True)
class PlanItem:
    cluster: str
    kind: str
    name: str
    team: str
    current_gpus: int | None
    proposed_gpus: int | None
    reason: str
    evidence: str
    expected_effect: str

    @property
    def change(self) -> int | None:
        if self.current_gpus is None or self.proposed_gpus is None:
            return None
        return self.proposed_gpus - self.current_gpus


@dataclass(frozen=True)
class Plan:
    id: str
    month: str
    created_at: datetime
    items: tuple[PlanItem, ...]
    status: PlanStatus = "proposed"
    dry_run: bool = True

    @classmethod
    def from_frame(cls, plan_id: str, month: str, created_at: datetime, items: pl.DataFrame) -> Plan:
        """A plan from QUOTA_PLAN_ITEMS rows (those of other plans are ignored)."""
        mine = items.filter(pl.col("plan_id") == plan_id)
        fields = [n for n in QUOTA_PLAN_ITEMS if n != "plan_id"]
        return cls(plan_id, month, created_at, tuple(PlanItem(**{k: r[k] for k in fields})
                                                     for r in mine.iter_rows(named=True)))

    def to_frame(self) -> pl.DataFrame:
        rows = [{"plan_id": self.id, **_item_dict(i)} for i in self.items]
        return pl.DataFrame(rows, schema=QUOTA_PLAN_ITEMS, orient="row")

    def to_dict(self) -> dict[str, Any]:
        created = self.created_at if self.created_at.tzinfo else self.created_at.replace(tzinfo=UTC)
        return {
            "id": self.id,
            "month": self.month,
            "created_at": created.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "status": self.status,
            "dry_run": self.dry_run,
            "note": DRY_RUN_NOTE,
            "items": [_item_dict(i) for i in self.items],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        created = datetime.strptime(data["created_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        if data.get("status", "proposed") != "proposed" or data.get("dry_run", True) is not True:
            raise ValueError("this version only reads proposed dry-run plans")
        return cls(data["id"], data["month"], created, tuple(PlanItem(**i) for i in data["items"]))


def _item_dict(item: PlanItem) -> dict[str, Any]:
    return {
        "cluster": item.cluster, "kind": item.kind, "name": item.name, "team": item.team,
        "current_gpus": item.current_gpus, "proposed_gpus": item.proposed_gpus, "reason": item.reason,
        "evidence": item.evidence, "expected_effect": item.expected_effect,
    }


def _gpus(value: int | None) -> str:
    return "unlimited" if value is None else str(value)


def render_text(plan: Plan) -> str:
    """A plain-text table for the CLI, then each item's reason, evidence and expected effect."""
    head = [
        f"Quota plan {plan.id} for {plan.month} ({plan.status}), created {plan.to_dict()['created_at']}",
        DRY_RUN_NOTE,
    ]
    if not plan.items:
        return "\n".join([*head, "", "No quota changes recommended."]) + "\n"
    table = [("#", "cluster", "kind", "name", "team", "current", "proposed", "change")]
    for n, i in enumerate(plan.items, 1):
        change = i.change
        table.append((str(n), i.cluster, i.kind, i.name, i.team, _gpus(i.current_gpus), _gpus(i.proposed_gpus),
                      "" if change is None else f"{change:+d}"))
    widths = [max(len(row[c]) for row in table) for c in range(len(table[0]))]
    numeric = {0, 5, 6, 7}
    lines = [
        "  ".join(cell.rjust(widths[c]) if c in numeric else cell.ljust(widths[c]) for c, cell in enumerate(row))
        .rstrip()
        for row in table
    ]
    details: list[str] = []
    for n, i in enumerate(plan.items, 1):
        details += [f"{n}. {i.reason}", f"   evidence: {i.evidence}", f"   expected effect: {i.expected_effect}"]
    return "\n".join([*head, "", *lines, "", *details]) + "\n"
