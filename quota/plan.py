"""Quota plans as data: they can be printed, stored, diffed, approved, applied and rolled back.

A plan holds its items (limit changes, kind `account`/`qos`, and advice, kind `advice`, never written
to a scheduler) and its replay: per cluster, team and queue, the observed waits and GPU-hours, the
replay under the current limits, and the replay under the plan (quota.analysis.PLAN_REPLAY).
Item texts are catalogue messages (reports.plan_text); `render_text` writes them in a language.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import polars as pl

from reports.locale import Formatter
from reports.plan_text import render
from sla.common import human_duration
from sla.results import QUOTA_PLAN_ITEMS

PlanStatus = Literal["proposed"]
ADVICE = "advice"
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
    replay: tuple[dict[str, Any], ...] = ()

    @property
    def changes(self) -> tuple[PlanItem, ...]:
        """The items that change a limit in a scheduler (advice is not written anywhere)."""
        return tuple(i for i in self.items if i.kind != ADVICE)

    @classmethod
    def from_frame(cls, plan_id: str, month: str, created_at: datetime, items: pl.DataFrame,
                   replay: pl.DataFrame | None = None) -> Plan:
        """A plan from QUOTA_PLAN_ITEMS rows (those of other plans are ignored) and its PLAN_REPLAY."""
        mine = items.filter(pl.col("plan_id") == plan_id)
        fields = [n for n in QUOTA_PLAN_ITEMS if n != "plan_id"]
        rows = tuple(replay.to_dicts()) if replay is not None else ()
        return cls(plan_id, month, created_at, tuple(PlanItem(**{k: r[k] for k in fields})
                                                     for r in mine.iter_rows(named=True)), replay=rows)

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
            "replay": [_rounded(r) for r in self.replay],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        created = datetime.strptime(data["created_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        if data.get("status", "proposed") != "proposed" or data.get("dry_run", True) is not True:
            raise ValueError("this version only reads proposed dry-run plans")
        return cls(data["id"], data["month"], created, tuple(PlanItem(**i) for i in data["items"]),
                   replay=tuple(data.get("replay") or ()))


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    """Seconds and GPU-hours to a tenth: the stored plan does not carry float noise."""
    return {k: round(v, 1) if isinstance(v, float) else v for k, v in row.items()}


def _item_dict(item: PlanItem) -> dict[str, Any]:
    return {
        "cluster": item.cluster, "kind": item.kind, "name": item.name, "team": item.team,
        "current_gpus": item.current_gpus, "proposed_gpus": item.proposed_gpus, "reason": item.reason,
        "evidence": item.evidence, "expected_effect": item.expected_effect,
    }


def _gpus(value: int | None) -> str:
    return "unlimited" if value is None else str(value)


def _duration(seconds: float | None) -> str:
    return "-" if seconds is None else human_duration(seconds)


def replay_lines(plan: Plan) -> list[str]:
    """The plan's replay per cluster and team: observed, replay under current limits, replay under the plan."""
    rows = [r for r in plan.replay if r.get("group") == "team"]
    if not rows:
        return []
    head = ("cluster", "team", "jobs", "observed p95", "replay now p95", "plan p95", "replay now p50", "plan p50",
            "GPU-h now", "GPU-h plan")
    table = [head]
    for r in rows:
        table.append((str(r["cluster"]), str(r["subject"]), str(r.get("jobs") or 0), _duration(r.get("observed_p95_s")),
                      _duration(r.get("current_p95_s")), _duration(r.get("plan_p95_s")),
                      _duration(r.get("current_p50_s")), _duration(r.get("plan_p50_s")),
                      f"{r.get('current_gpu_hours') or 0:,.0f}", f"{r.get('plan_gpu_hours') or 0:,.0f}"))
    widths = [max(len(row[c]) for row in table) for c in range(len(head))]
    return ["Replay of the month under the plan (waits of the records submitted in it, GPU-hours held in it):",
            *["  ".join(cell.rjust(widths[c]) if c >= 2 else cell.ljust(widths[c]) for c, cell in enumerate(row))
              .rstrip() for row in table]]


def render_text(plan: Plan, lang: str = "en") -> str:
    """A plain-text table for the CLI, then each item's reason, evidence and expected effect, then the replay."""
    formatter = Formatter(lang)  # type: ignore[arg-type]
    head = [
        f"Quota plan {plan.id} for {plan.month} ({plan.status}), created {plan.to_dict()['created_at']}",
        DRY_RUN_NOTE,
    ]
    if not plan.items:
        return "\n".join([*head, "", "No quota changes recommended."]) + "\n"
    table = [("#", "cluster", "kind", "name", "team", "current", "proposed", "change")]
    for n, i in enumerate(plan.items, 1):
        change = i.change
        table.append((str(n), i.cluster, i.kind, i.name, i.team,
                      "" if i.kind == ADVICE else _gpus(i.current_gpus),
                      "" if i.kind == ADVICE else _gpus(i.proposed_gpus),
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
        details += [f"{n}. {render(i.reason, formatter)}",
                    f"   evidence: {render(i.evidence, formatter, 'list')}",
                    f"   expected effect: {render(i.expected_effect, formatter)}"]
    replay = replay_lines(plan)
    return "\n".join([*head, "", *lines, "", *details, *([""] if replay else []), *replay]) + "\n"
