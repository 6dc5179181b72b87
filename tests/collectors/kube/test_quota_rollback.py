"""Plan -> approve -> apply -> rollback on Kueue ClusterQueues and Volcano Queues, against the fake API
server: the same workflow and audit records as Slurm, through the Kueue and Volcano write primitives."""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from collectors.kube import KubeApi, KueueQuotaWriter, VolcanoQuotaWriter
from collectors.slurm import QuotaTarget
from gpusteward.errors import PermanentError
from quota.plan import Plan, PlanItem
from quota.workflow import apply_plan, rollback_plan, target_of
from tests.collectors.kube.server import FakeKube
from warehouse.quota_store import ApplyRecord, Decision

NOW = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
CQ = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/tas-cluster-queue"
QUEUES = "/apis/scheduling.volcano.sh/v1beta1/queues"


@dataclass
class MemoryStore:
    """The `quota.workflow.QuotaStore` over dicts: one approved plan."""

    plan: Plan
    records: list[ApplyRecord] = field(default_factory=list)

    def plan_body(self, plan_id: str) -> dict[str, Any] | None:
        return self.plan.to_dict() if plan_id == self.plan.id else None

    def decision(self, plan_id: str) -> Decision | None:
        return Decision(plan_id, "approved", "alice", NOW)

    def applies(self, plan_id: str) -> list[ApplyRecord]:
        return [r for r in self.records if r.plan_id == plan_id]

    def record_apply(self, record: ApplyRecord) -> None:
        self.records.append(record)


def _store(*items: PlanItem) -> MemoryStore:
    return MemoryStore(Plan("2026-10-kube", "2026-10", NOW, items))


def _item(kind: str, name: str, current: int | None, proposed: int | None) -> PlanItem:
    return PlanItem("k8s", kind, name, "nlp", current, proposed, "reason", "evidence", "effect")


def _nominal(kube: FakeKube) -> Any:
    return kube.objects[CQ]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"]


def _clock() -> datetime:
    return NOW


def test_kueue_apply_then_rollback_restores_nominal_quota(api: KubeApi, kube: FakeKube) -> None:
    store = _store(_item("clusterqueue", "tas-cluster-queue", 16, 20))
    writer = KueueQuotaWriter(api)
    applied = apply_plan(store, writer, store.plan.id, actor="bob", clock=_clock)
    assert (applied.result, _nominal(kube)) == ("applied", "20")
    assert [(c.kind, c.name, c.before, c.after, c.outcome) for c in applied.changes] == [
        ("clusterqueue", "tas-cluster-queue", 16, 20, "written")]
    undone = rollback_plan(store, writer, store.plan.id, actor="carol", clock=_clock)
    assert (undone.result, _nominal(kube)) == ("rolled-back", "16")
    assert [(c.before, c.after, c.outcome) for c in undone.changes] == [(20, 16, "written")]
    assert [op["op"] for op in kube.patches[-1][1]] == ["test", "test", "replace"]  # guarded by `test`


def test_kueue_rollback_with_a_named_flavor(api: KubeApi, kube: FakeKube) -> None:
    targets = functools.partial(target_of, flavor="tas-flavor")
    store = _store(_item("clusterqueue", "tas-cluster-queue", 16, 12))
    writer = KueueQuotaWriter(api)
    assert apply_plan(store, writer, store.plan.id, actor="bob", clock=_clock, targets=targets).result == "applied"
    assert _nominal(kube) == "12"
    undone = rollback_plan(store, writer, store.plan.id, actor="carol", clock=_clock, targets=targets)
    assert (undone.result, _nominal(kube)) == ("rolled-back", "16")


def test_kueue_rollback_refused_when_changed_by_hand_after_apply(api: KubeApi, kube: FakeKube) -> None:
    store = _store(_item("clusterqueue", "tas-cluster-queue", 16, 20))
    writer = KueueQuotaWriter(api)
    apply_plan(store, writer, store.plan.id, actor="bob", clock=_clock)
    kube.objects[CQ]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = "24"
    patches = len(kube.patches)
    undone = rollback_plan(store, writer, store.plan.id, actor="carol", clock=_clock)
    assert undone.result == "refused"
    assert "is 24 not 20" in undone.detail
    assert (_nominal(kube), len(kube.patches)) == ("24", patches)  # nothing written


def test_kueue_needs_a_flavor_when_gpus_are_in_several(api: KubeApi, kube: FakeKube) -> None:
    flavors = kube.objects[CQ]["spec"]["resourceGroups"][0]["flavors"]
    flavors.append({"name": "spot", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 4}]})
    writer = KueueQuotaWriter(api)
    with pytest.raises(PermanentError, match=r"several flavors \(tas-flavor, spot\); name one"):
        writer.read_gpu_limit(QuotaTarget("clusterqueue", "tas-cluster-queue"))
    assert writer.read_gpu_limit(QuotaTarget("clusterqueue", "tas-cluster-queue", flavor="spot")) == 4
    store = _store(_item("clusterqueue", "tas-cluster-queue", 16, 20))
    refused = apply_plan(store, writer, store.plan.id, actor="bob", clock=_clock)
    assert refused.result == "refused"
    assert "name one" in refused.detail


def test_volcano_capability_apply_then_rollback(api: KubeApi, kube: FakeKube) -> None:
    kube.objects[f"{QUEUES}/root-eng-prod"]["spec"]["capability"] = {"nvidia.com/gpu": "8"}
    store = _store(_item("queue", "root-eng-prod", 8, 10))
    writer = VolcanoQuotaWriter(api)
    assert apply_plan(store, writer, store.plan.id, actor="bob", clock=_clock).result == "applied"
    assert kube.objects[f"{QUEUES}/root-eng-prod"]["spec"]["capability"] == {"nvidia.com/gpu": "10"}
    undone = rollback_plan(store, writer, store.plan.id, actor="carol", clock=_clock)
    assert undone.result == "rolled-back"
    assert kube.objects[f"{QUEUES}/root-eng-prod"]["spec"]["capability"] == {"nvidia.com/gpu": "8"}


def test_volcano_deserved_rollback_uses_the_same_field(api: KubeApi, kube: FakeKube) -> None:
    spec = kube.objects[f"{QUEUES}/queue1"]["spec"]
    spec["deserved"]["nvidia.com/gpu"] = "4"
    deserved = functools.partial(target_of, field="deserved")
    store = _store(_item("queue", "queue1", 4, 6))
    writer = VolcanoQuotaWriter(api)
    assert apply_plan(store, writer, store.plan.id, actor="bob", clock=_clock, targets=deserved).result == "applied"
    assert kube.objects[f"{QUEUES}/queue1"]["spec"]["deserved"]["nvidia.com/gpu"] == "6"
    # Rolled back through another field (capability, the default), the limit is not the one applied: refused.
    wrong = rollback_plan(store, writer, store.plan.id, actor="carol", clock=_clock)
    assert wrong.result == "refused"
    assert kube.objects[f"{QUEUES}/queue1"]["spec"]["deserved"]["nvidia.com/gpu"] == "6"
    undone = rollback_plan(store, writer, store.plan.id, actor="carol", clock=_clock, targets=deserved)
    assert undone.result == "rolled-back"
    assert kube.objects[f"{QUEUES}/queue1"]["spec"]["deserved"] == {"cpu": 2, "memory": "8Gi", "nvidia.com/gpu": "4"}


def test_volcano_rollback_of_a_new_cap_makes_the_queue_unlimited_again(api: KubeApi, kube: FakeKube) -> None:
    store = _store(_item("queue", "root-sci-dev", None, 6))
    writer = VolcanoQuotaWriter(api)
    assert apply_plan(store, writer, store.plan.id, actor="bob", clock=_clock).result == "applied"
    assert kube.objects[f"{QUEUES}/root-sci-dev"]["spec"]["capability"] == {"nvidia.com/gpu": "6"}
    assert rollback_plan(store, writer, store.plan.id, actor="carol", clock=_clock).result == "rolled-back"
    assert kube.objects[f"{QUEUES}/root-sci-dev"]["spec"]["capability"] == {}
    assert writer.read_gpu_limit(QuotaTarget("queue", "root-sci-dev")) is None
