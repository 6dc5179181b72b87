"""Kueue and Volcano adapters against recorded objects served on 127.0.0.1 at Kubernetes API paths."""

from __future__ import annotations

import copy
from datetime import datetime

import polars as pl
import pytest

from collectors.kube import KubeApi, KueueQuotaWriter, KueueReader, PatchRefusedError, VolcanoQuotaWriter, VolcanoReader
from collectors.kube.api import quantity
from collectors.slurm import DryRunScheduler, QuotaConflictError, QuotaTarget
from gpusteward import tables
from gpusteward.errors import InputError, PermanentError, TransientError
from tests.collectors.kube.objects import TS, load
from tests.collectors.kube.server import FakeKube, serve


def test_kueue_cluster_queues(api: KubeApi) -> None:
    batch, detail = KueueReader(api, "k8s").quotas(TS)
    snaps = batch.frames["quota_snapshots"]
    assert snaps.schema == tables.QUOTA_SNAPSHOTS
    limits = dict(snaps.select("name", "gpu_limit").rows())
    assert limits == {"tas-cluster-queue": 16, "cluster-queue": None, "team-a-cq": None}
    assert set(snaps["kind"]) == {"clusterqueue"}
    row = detail.row(0, named=True)
    assert (row["cluster_queue"], row["flavor"], row["resource"], row["nominal"]) == (
        "tas-cluster-queue",
        "tas-flavor",
        "nvidia.com/gpu",
        16,
    )


def test_kueue_local_queues_and_cohorts(api: KubeApi) -> None:
    reader = KueueReader(api, "k8s")
    queues = reader.local_queues()
    assert dict(queues.select("name", "cluster_queue").rows()) == {
        "tas-user-queue": "tas-cluster-queue",
        "user-queue": "cluster-queue",
    }
    assert reader.cohorts().is_empty()  # none recorded; the list answers empty


def test_kueue_workloads_wait_and_evictions(api: KubeApi) -> None:
    workloads, evictions = KueueReader(api, "k8s").workloads()
    by = {r["name"]: r for r in workloads.rows(named=True)}
    assert by["admitted"]["admission_wait_s"] == 540.0
    assert by["admitted"]["cluster_queue"] == "cluster-queue"
    assert (by["pending"]["status"], by["pending"]["reason"]) == ("pending", "Pending")
    assert by["inadmissible"]["status"] == "inadmissible"
    assert "LocalQueue user-queue doesn't exist" in by["inadmissible"]["message"]
    assert by["evicted"]["status"] == "evicted"
    assert by["evicted"]["admission_wait_s"] is None
    assert by["pending"]["gpus"] == 2
    ev = evictions.row(0, named=True)
    assert (ev["name"], ev["reason"], ev["ts"]) == ("evicted", "Preempted", datetime(2024, 3, 21, 15, 49, 55))


def test_kueue_v1beta1(kube: FakeKube) -> None:
    """Clusters before Kueue 0.15 serve v1beta1, where the cohort field is `spec.cohort`."""
    old = FakeKube()
    for recorded in load("cluster_queue.md.block06.clusterqueue-cohort-a"):
        obj = copy.deepcopy(recorded)
        obj["spec"]["cohort"] = obj["spec"].pop("cohortName")
        old.add(obj, version="v1beta1")
    with serve(old) as url:
        api = KubeApi(url)
        _, detail = KueueReader(api, "k8s", version="v1beta1", gpu="cpu").quotas(TS)
        api.close()
    assert detail.row(0, named=True)["cohort"] == "team-ab"
    assert detail.row(0, named=True)["nominal"] == 9


def test_kueue_quota_patch(api: KubeApi, kube: FakeKube) -> None:
    writer = KueueQuotaWriter(api)
    target = QuotaTarget("clusterqueue", "tas-cluster-queue", flavor="tas-flavor")
    change = writer.set_gpu_limit(target, expected=16, new=24)
    assert (change.before, change.after, change.applied) == (16, 24, True)
    path, ops, dry = kube.patches[-1]
    assert ops[1] == {"op": "test", "path": "/spec/resourceGroups/0/flavors/0/resources/2/nominalQuota", "value": 16}
    assert ops[2]["op"] == "replace"
    assert not dry
    with pytest.raises(QuotaConflictError, match="GPU limit is 24, not the expected 16"):
        writer.set_gpu_limit(target, expected=16, new=8)
    assert path.endswith("/clusterqueues/tas-cluster-queue")


def test_kueue_patch_refused_when_quota_changed_underneath(api: KubeApi, kube: FakeKube) -> None:
    path = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/tas-cluster-queue"
    gets = []

    def someone_else_edits(got: str) -> None:
        gets.append(got)
        if len(gets) == 2:  # after the writer's last read, before its patch
            kube.objects[path]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"] = "20"

    kube.after_get = someone_else_edits
    target = QuotaTarget("clusterqueue", "tas-cluster-queue", flavor="tas-flavor")
    with pytest.raises(PatchRefusedError, match=r"HTTP 422: .*testing value .*nominalQuota failed"):
        KueueQuotaWriter(api).set_gpu_limit(target, expected=16, new=24)
    kube.after_get = None
    assert KueueQuotaWriter(api).read_gpu_limit(target) == 20  # the other edit stands, ours was not applied


def test_kueue_server_dry_run_and_local_dry_run(api: KubeApi, kube: FakeKube) -> None:
    target = QuotaTarget("clusterqueue", "tas-cluster-queue", flavor="tas-flavor")
    change = KueueQuotaWriter(api, server_dry_run=True).set_gpu_limit(target, expected=16, new=32)
    assert (change.applied, change.before, change.requested, change.after) == (False, 16, 32, 16)
    assert kube.patches[-1][2] is True
    local = DryRunScheduler(KueueQuotaWriter(api))
    assert local.set_gpu_limit(target, expected=16, new=40).applied is False
    assert len(kube.patches) == 1
    assert KueueQuotaWriter(api).read_gpu_limit(target) == 16


def test_volcano_queues_and_podgroups(api: KubeApi) -> None:
    batch, queues = VolcanoReader(api, "k8s").quotas(TS)
    snaps = batch.frames["quota_snapshots"]
    assert set(snaps["kind"]) == {"queue"}
    names = set(queues["name"])
    assert {"default", "queue1", "root-eng-prod"} <= names
    assert queues.filter(pl.col("name") == "queue1")["capability"].to_list() == [None]
    groups = VolcanoReader(api, "k8s").podgroups()
    row = groups.row(0, named=True)
    assert (row["name"], row["queue"], row["min_member"], row["gpus"]) == ("test-pg", "default", 1, None)


def test_volcano_quota_patch(api: KubeApi, kube: FakeKube) -> None:
    writer = VolcanoQuotaWriter(api)
    target = QuotaTarget("queue", "queue1", field="deserved")
    assert writer.read_gpu_limit(target) is None
    change = writer.set_gpu_limit(target, expected=None, new=8)
    assert change.after == 8
    assert (
        kube.objects["/apis/scheduling.volcano.sh/v1beta1/queues/queue1"]["spec"]["deserved"]["nvidia.com/gpu"] == "8"
    )
    again = writer.set_gpu_limit(target, expected=8, new=4)
    assert kube.patches[-1][1][0] == {"op": "test", "path": "/spec/deserved/nvidia.com~1gpu", "value": "8"}
    assert again.after == 4
    cap = QuotaTarget("queue", "root-eng-prod")  # no capability map yet: it is added
    assert writer.set_gpu_limit(cap, expected=None, new=2).after == 2
    with pytest.raises(QuotaConflictError):
        writer.set_gpu_limit(cap, expected=None, new=3)


def test_kube_errors_name_the_source(kube: FakeKube) -> None:
    with serve(kube) as url:
        api = KubeApi(url)
        with pytest.raises(PermanentError, match=r"kubernetes http://127\.0\.0\.1:\d+ GET .*HTTP 404"):
            api.get("/apis/kueue.x-k8s.io/v1beta2/clusterqueues/none")
        api.close()
    api = KubeApi(url)  # the server has stopped
    with pytest.raises(TransientError, match="ConnectError"):
        api.list("/apis/kueue.x-k8s.io/v1beta2/clusterqueues")
    api.close()
    with pytest.raises(InputError, match="not a whole number"):
        quantity("1.5", source="x")
