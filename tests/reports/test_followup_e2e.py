"""End to end: a plan approved and applied in October (audit rows in a real warehouse), the months
evaluated and stored, and November's review says which applied change moved its target metric."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from collectors.slurm.writes import QuotaChange, QuotaTarget, guarded_write
from quota.plan import Plan, PlanItem
from quota.workflow import apply_plan, rollback_plan
from service.pipeline import produce_review
from tests.reports.fixtures import MONTH, demo_config, demo_outputs
from tests.reports.followup_fixtures import BASELINE, baseline_outputs
from warehouse import Warehouse, control, open_warehouse
from warehouse.quota_store import WarehouseQuotaStore, applied_changes

PLAN_ID = "2026-09-followup"
APPLIED = datetime(2026, 10, 5, 9, 30, tzinfo=UTC)
TITLE = "## Whether last month's applied changes helped"


@dataclass
class MemoryScheduler:
    limits: dict[str, int | None]
    writes: list[tuple[str, int | None]] = field(default_factory=list)

    @property
    def transport(self) -> str:
        return "memory"

    def read_gpu_limit(self, target: QuotaTarget) -> int | None:
        return self.limits[target.name]

    def set_gpu_limit(self, target: QuotaTarget, *, expected: int | None, new: int | None) -> QuotaChange:
        def write(_current: int | None, value: int | None) -> str:
            self.writes.append((target.name, value))
            self.limits[target.name] = value
            return "set"

        return guarded_write(self, target, expected=expected, new=new, write=write)


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    items = (
        PlanItem("east", "account", "vision", "vision", 16, 12, "Lower vision's GPU quota on east.", "share 1.40",
                 "Frees up to 4 GPUs on east for teams below their share."),
        PlanItem("west", "account", "nlp", "nlp", 16, 20, "Raise nlp's GPU quota on west.", "west/eval p95 10h",
                 "Up to 4 more GPUs at once for nlp on west, so the queue's wait should fall toward its objective."),
    )
    plan = Plan(PLAN_ID, str(BASELINE), APPLIED, items)
    with open_warehouse(tmp_path / "w.duckdb") as w:
        w.store_plan(plan.id, BASELINE, APPLIED, plan.status, dry_run=True, body=plan.to_dict(), items=plan.to_frame())
        w.store_month_outputs(baseline_outputs())
        w.store_month_outputs(demo_outputs())
        yield w


def _apply(wh: Warehouse, sched: MemoryScheduler) -> None:
    control.record(wh, "alice", "plan.approve", PLAN_ID, at=APPLIED, reason="ok")
    record = apply_plan(WarehouseQuotaStore(wh), sched, PLAN_ID, actor="bob", clock=lambda: APPLIED)
    assert record.result == "applied"


def _section(wh: Warehouse, out: Path) -> str:
    _review, paths = produce_review(wh, demo_config(), MONTH, out, formats=["md"], langs=["en"])
    text = next(p for p in paths if p.suffix == ".md").read_text(encoding="utf-8")
    start = text.index(TITLE)
    return text[start : text.find("\n## ", start)]


def test_review_follows_up_the_applied_plan(wh: Warehouse, tmp_path: Path) -> None:
    sched = MemoryScheduler({"vision": 16, "nlp": 16})
    _apply(wh, sched)
    assert sched.limits == {"vision": 12, "nlp": 20}
    changes = applied_changes(wh)
    assert [(c.name, c.before, c.after, c.approved_by, c.team) for c in changes] == [
        ("vision", 16, 12, "alice", "vision"), ("nlp", 16, 20, "alice", "nlp")]
    section = _section(wh, tmp_path / "out")
    assert "2 quota changes were applied last month" in section
    rows = {line.split(" | ")[2]: line for line in section.splitlines() if line.startswith(("| east", "| west"))}
    assert "west/eval" in rows["nlp"]
    assert "moved as expected" in rows["nlp"]
    assert "share over entitlement" in rows["vision"]
    assert "did not move" in rows["vision"]


def test_review_says_nothing_applied_before_any_apply_and_after_a_rollback(wh: Warehouse, tmp_path: Path) -> None:
    assert "_Not available:" in _section(wh, tmp_path / "before")
    sched = MemoryScheduler({"vision": 16, "nlp": 16})
    _apply(wh, sched)
    undone = rollback_plan(WarehouseQuotaStore(wh), sched, PLAN_ID, actor="carol",
                           clock=lambda: datetime(2026, 10, 20, tzinfo=UTC))
    assert undone.result == "rolled-back"
    section = _section(wh, tmp_path / "after")
    assert "rolled back before the month ended" in section
    assert "0 moved as expected, 0 did not move and 2 cannot be judged" in section
    assert "| moved as expected |" not in section
