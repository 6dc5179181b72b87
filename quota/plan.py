"""Quota plans as data: they can be printed, stored, diffed, approved, applied and rolled back.

A plan holds its items (limit changes, kind `account`/`qos`, and advice, kind `advice`, never written
to a scheduler) and its replay: per cluster, team and queue, the observed waits and GPU-hours, the
replay under the current limits, and the replay under the plan (quota.analysis.PLAN_REPLAY).
A plan whose replay makes a protected objective worse carries them (`protected`, quota.protected): it is
approved only with an override (warehouse.control). Item texts are catalogue messages
(reports.plan_text); `render_text` writes them, and the tables' headers, in a language.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import polars as pl

from reports.locale import Formatter
from reports.model import Cell, Column, Quantity, Row, Table, Term, Text
from reports.plan_text import render, replay_tables, text_table
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
    protected: tuple[dict[str, Any], ...] = ()  # quota.protected: objectives its replay makes worse

    @property
    def changes(self) -> tuple[PlanItem, ...]:
        """The items that change a limit in a scheduler (advice is not written anywhere)."""
        return tuple(i for i in self.items if i.kind != ADVICE)

    @classmethod
    def from_frame(cls, plan_id: str, month: str, created_at: datetime, items: pl.DataFrame, *,
                   replay: pl.DataFrame | None = None, protected: Sequence[dict[str, Any]] = ()) -> Plan:
        """A plan from QUOTA_PLAN_ITEMS rows (those of other plans are ignored), its PLAN_REPLAY and the
        protected objectives its replay makes worse (quota.protected)."""
        mine = items.filter(pl.col("plan_id") == plan_id)
        fields = [n for n in QUOTA_PLAN_ITEMS if n != "plan_id"]
        rows = tuple(replay.to_dicts()) if replay is not None else ()
        return cls(plan_id, month, created_at, tuple(PlanItem(**{k: r[k] for k in fields})
                                                     for r in mine.iter_rows(named=True)), replay=rows,
                   protected=tuple(dict(p) for p in protected))

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
            "protected": [_rounded(p) for p in self.protected],
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, indent=2)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Plan:
        created = datetime.strptime(data["created_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
        if data.get("status", "proposed") != "proposed" or data.get("dry_run", True) is not True:
            raise ValueError("this version only reads proposed dry-run plans")
        return cls(data["id"], data["month"], created, tuple(PlanItem(**i) for i in data["items"]),
                   replay=tuple(data.get("replay") or ()), protected=tuple(data.get("protected") or ()))


def _rounded(row: dict[str, Any]) -> dict[str, Any]:
    """Seconds and GPU-hours to a tenth: the stored plan does not carry float noise."""
    return {k: round(v, 1) if isinstance(v, float) else v for k, v in row.items()}


def _item_dict(item: PlanItem) -> dict[str, Any]:
    return {
        "cluster": item.cluster, "kind": item.kind, "name": item.name, "team": item.team,
        "current_gpus": item.current_gpus, "proposed_gpus": item.proposed_gpus, "reason": item.reason,
        "evidence": item.evidence, "expected_effect": item.expected_effect,
    }


def _plan_table(plan: Plan) -> Table:
    rows = []
    for n, i in enumerate(plan.items, 1):
        limit = i.kind != ADVICE
        rows.append(Row((
            Text(str(n)), Text(i.cluster), Term("quota_kind", i.kind), Text(i.name), Text(i.team),
            _limit(i.current_gpus) if limit else Text(""), _limit(i.proposed_gpus) if limit else Text(""),
            Text("" if i.change is None else f"{i.change:+d}"),
        )))
    columns = (Column("col.number", numeric=True), Column("col.cluster"), Column("col.kind"), Column("col.name"),
               Column("col.team"), Column("col.current", numeric=True), Column("col.proposed", numeric=True),
               Column("col.change", numeric=True))
    return Table(columns, tuple(rows))


def _limit(value: int | None) -> Cell:
    return Term("common", "unlimited") if value is None else Quantity(value, "count")


def replay_lines(plan: Plan, lang: str = "en") -> list[str]:
    """The plan's replay per cluster, team and queue (observed, replay under the current limits with its
    calibration error, replay under the plan) as plain-text tables in a language."""
    tables = replay_tables(plan.replay)
    if tables is None:
        return []
    formatter = Formatter(lang)  # type: ignore[arg-type]
    return [*text_table(tables[0], formatter), "", *text_table(tables[1], formatter)]


def protected_lines(plan: Plan, lang: str = "en") -> list[str]:
    """The protected objectives the plan makes worse in its replay: it is approved only with an override."""
    if not plan.protected:
        return []
    formatter = Formatter(lang)  # type: ignore[arg-type]
    return [formatter.t("quota.protected.title"),
            *(f"- {render(str(f.get('message') or ''), formatter)}" for f in plan.protected)]


def render_text(plan: Plan, lang: str = "en") -> str:
    """A plain-text table for the CLI, then each item's reason, evidence and expected effect, then the
    protected objectives it makes worse and the replay; headers and words from the catalogues."""
    formatter = Formatter(lang)  # type: ignore[arg-type]
    status = formatter.term("plan_state", plan.status)
    head = [formatter.t("quota.cli.title", id=plan.id, month=plan.month, status=status,
                        created=plan.to_dict()["created_at"]),
            formatter.t("quota.cli.dry_run")]
    if not plan.items:
        return "\n".join([*head, "", formatter.t("quota.cli.none")]) + "\n"
    details: list[str] = []
    for n, i in enumerate(plan.items, 1):
        details += [f"{n}. {render(i.reason, formatter)}",
                    "   " + formatter.t("quota.cli.evidence", text=render(i.evidence, formatter, "list")),
                    "   " + formatter.t("quota.cli.effect", text=render(i.expected_effect, formatter))]
    blocks = [head, text_table(_plan_table(plan), formatter), details, protected_lines(plan, lang),
              replay_lines(plan, lang)]
    return "\n\n".join("\n".join(b) for b in blocks if b) + "\n"
