"""Approve -> apply -> audit -> rollback over a real warehouse and an in-memory scheduler."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import pytest

from collectors.slurm.writes import QuotaChange, QuotaTarget, guarded_write
from gpusteward.domain import Month
from quota.plan import Plan, PlanItem
from quota.workflow import PlanNotFoundError, apply_plan, rollback_plan
from warehouse import Warehouse, control, open_warehouse
from warehouse.quota_store import WarehouseQuotaStore, plan_state

NOW = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
PLAN_ID = "2026-10-abc"


@dataclass
class MemoryScheduler:
    """A QuotaWriter over a dict; `fail_on` makes the first write of that account store a wrong value."""

    limits: dict[str, int | None]
    fail_on: str | None = None
    writes: list[tuple[str, int | None]] = field(default_factory=list)

    @property
    def transport(self) -> str:
        return "memory"

    def read_gpu_limit(self, target: QuotaTarget) -> int | None:
        return self.limits[target.name]

    def set_gpu_limit(self, target: QuotaTarget, *, expected: int | None, new: int | None) -> QuotaChange:
        def write(_current: int | None, value: int | None) -> str:
            self.writes.append((target.name, value))
            broken = target.name == self.fail_on
            self.limits[target.name] = (value or 0) + 1 if broken else value
            self.fail_on = None if broken else self.fail_on  # fails once
            return "set"

        return guarded_write(self, target, expected=expected, new=new, write=write)


def _item(name: str, current: int, proposed: int) -> PlanItem:
    return PlanItem("west", "account", name, name, current, proposed, f"change {name}", "evidence", "effect")


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with open_warehouse(tmp_path / "w.duckdb") as w:
        plan = Plan(PLAN_ID, "2026-10", NOW, (_item("vision", 8, 6), _item("research", 4, 5), _item("speech", 4, 5)))
        w.store_plan(plan.id, Month.parse("2026-10"), NOW, plan.status, dry_run=True, body=plan.to_dict(),
                     items=plan.to_frame())
        yield w


def _clock() -> datetime:
    return NOW


def _approve(wh: Warehouse) -> None:
    control.record(wh, "alice", "plan.approve", PLAN_ID, at=NOW, reason="ok")


def test_apply_needs_approval_and_records_the_refusal(wh: Warehouse) -> None:
    sched = MemoryScheduler({"vision": 8, "research": 4, "speech": 4})
    record = apply_plan(WarehouseQuotaStore(wh), sched, PLAN_ID, actor="bob", clock=_clock)
    assert (record.result, sched.writes) == ("refused", [])
    assert "approve it first" in record.detail
    assert [r.result for r in WarehouseQuotaStore(wh).applies(PLAN_ID)] == ["refused"]


def test_dry_run_reads_checks_and_writes_nothing(wh: Warehouse) -> None:
    sched = MemoryScheduler({"vision": 8, "research": 4, "speech": 4})
    record = apply_plan(WarehouseQuotaStore(wh), sched, PLAN_ID, actor="bob", clock=_clock, dry_run=True)
    assert (record.result, sched.writes, record.transport) == ("dry-run", [], "dry-run(memory)")
    assert [c.outcome for c in record.changes] == ["would-write"] * 3
    assert plan_state(wh, PLAN_ID) == "proposed"


def test_apply_audit_and_rollback(wh: Warehouse) -> None:
    store = WarehouseQuotaStore(wh)
    _approve(wh)
    sched = MemoryScheduler({"vision": 8, "research": 4, "speech": 4})
    record = apply_plan(store, sched, PLAN_ID, actor="bob", clock=_clock)
    assert record.result == "applied", record.detail
    assert sched.limits == {"vision": 6, "research": 5, "speech": 5}
    assert (record.approved_by, record.actor) == ("alice", "bob")
    assert [(c.name, c.before, c.after, c.outcome) for c in record.changes] == [
        ("vision", 8, 6, "written"), ("research", 4, 5, "written"), ("speech", 4, 5, "written")]
    assert plan_state(wh, PLAN_ID) == "applied"
    again = apply_plan(store, sched, PLAN_ID, actor="bob", clock=_clock)
    assert (again.result, "already applied" in again.detail) == ("refused", True)

    back = rollback_plan(store, sched, PLAN_ID, actor="carol", clock=_clock)
    assert back.result == "rolled-back", back.detail
    assert sched.limits == {"vision": 8, "research": 4, "speech": 4}
    assert [c.name for c in back.changes] == ["speech", "research", "vision"]  # reverse order
    assert plan_state(wh, PLAN_ID) == "rolled-back"
    assert [r.action for r in store.applies(PLAN_ID)] == ["apply", "apply", "rollback"]


def test_stale_plan_is_refused_before_any_write(wh: Warehouse) -> None:
    _approve(wh)
    sched = MemoryScheduler({"vision": 8, "research": 4, "speech": 7})  # speech changed by hand
    record = apply_plan(WarehouseQuotaStore(wh), sched, PLAN_ID, actor="bob", clock=_clock)
    assert (record.result, sched.writes) == ("refused", [])
    assert "speech is 7 not 4" in record.detail.replace("account ", "").replace(" (cluster=west)", "")
    assert [c.outcome for c in record.changes] == ["not-reached", "not-reached", "conflict"]


def test_a_failed_write_restores_the_others(wh: Warehouse) -> None:
    _approve(wh)
    sched = MemoryScheduler({"vision": 8, "research": 4, "speech": 4}, fail_on="research")
    record = apply_plan(WarehouseQuotaStore(wh), sched, PLAN_ID, actor="bob", clock=_clock)
    assert record.result == "failed-restored", record.detail
    assert sched.limits == {"vision": 8, "research": 4, "speech": 4}  # never half-applied
    assert [c.outcome for c in record.changes] == ["restored", "failed", "not-reached"]
    assert plan_state(wh, PLAN_ID) == "approved"


def test_rollback_refuses_when_changed_since(wh: Warehouse) -> None:
    store = WarehouseQuotaStore(wh)
    _approve(wh)
    sched = MemoryScheduler({"vision": 8, "research": 4, "speech": 4})
    apply_plan(store, sched, PLAN_ID, actor="bob", clock=_clock)
    sched.limits["vision"] = 3
    back = rollback_plan(store, sched, PLAN_ID, actor="carol", clock=_clock)
    assert back.result == "refused"
    assert sched.limits == {"vision": 3, "research": 5, "speech": 5}
    assert plan_state(wh, PLAN_ID) == "applied"


def test_unknown_plan(wh: Warehouse) -> None:
    with pytest.raises(PlanNotFoundError):
        apply_plan(WarehouseQuotaStore(wh), MemoryScheduler({}), "nope", actor="bob", clock=_clock)


def test_with_separation_of_duties_the_approver_cannot_apply(wh: Warehouse) -> None:
    _approve(wh)  # alice approved
    sched = MemoryScheduler({"vision": 8, "research": 4, "speech": 4})
    store = WarehouseQuotaStore(wh)
    record = apply_plan(store, sched, PLAN_ID, actor="alice", clock=_clock, separation=True)
    assert (record.result, sched.writes) == ("refused", [])
    assert record.detail == (f"separation of duties: alice approved plan {PLAN_ID}, so someone else must apply it "
                             "(service.separation_of_duties)")
    assert [(r.actor, r.result) for r in store.applies(PLAN_ID)] == [("alice", "refused")]  # audited
    dry = apply_plan(store, sched, PLAN_ID, actor="alice", clock=_clock, dry_run=True, separation=True)
    assert dry.result == "dry-run"  # a dry run writes nothing: anyone may check a plan
    applied = apply_plan(store, sched, PLAN_ID, actor="bob", clock=_clock, separation=True)
    assert applied.result == "applied"
    assert (applied.actor, applied.approved_by) == ("bob", "alice")


def test_without_separation_the_approver_may_apply(wh: Warehouse) -> None:
    _approve(wh)
    sched = MemoryScheduler({"vision": 8, "research": 4, "speech": 4})
    assert apply_plan(WarehouseQuotaStore(wh), sched, PLAN_ID, actor="alice", clock=_clock).result == "applied"
