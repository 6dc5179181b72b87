"""Plan state and the apply audit trail (migration 007)."""

from __future__ import annotations

from datetime import datetime

from gpusteward.domain import Month
from warehouse import Warehouse, control
from warehouse.quota_store import ApplyRecord, ChangeRecord, applies, decision, plan_body, plan_state, record_apply

T = datetime(2026, 11, 2, 9)


def _rec(apply_id: str, action: str, result: str) -> ApplyRecord:
    change = ChangeRecord(1, "west", "account", "nlp", 24, 30, 24, 30, "written", "set")
    return ApplyRecord(apply_id, "p1", action, "bob", "alice", T, T, T, "sacctmgr", result, "d", (change,))  # type: ignore[arg-type]


def test_state_follows_decisions_and_applies(wh: Warehouse) -> None:
    import polars as pl

    wh.store_plan("p1", Month.parse("2026-10"), T, "proposed", dry_run=True, body={"id": "p1"}, items=pl.DataFrame())
    assert (plan_body(wh, "p1"), plan_state(wh, "p1"), decision(wh, "p1")) == ({"id": "p1"}, "proposed", None)
    control.record(wh, "alice", "plan.approve", "p1", at=T)
    assert plan_state(wh, "p1") == "approved"
    record_apply(wh, _rec("a1", "apply", "applied"))
    assert plan_state(wh, "p1") == "applied"
    record_apply(wh, _rec("a2", "rollback", "rolled-back"))
    assert plan_state(wh, "p1") == "rolled-back"
    got = applies(wh, "p1")
    assert [r.apply_id for r in got] == ["a1", "a2"]  # same timestamps: recorded order kept
    assert got[0] == _rec("a1", "apply", "applied")
    assert plan_body(wh, "missing") is None
