"""Recorded Kueue and Volcano objects (tests/data/scheduler/kube) loaded into a `FakeKube`."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from tests.collectors.kube.server import FakeKube, serve

DATA = Path(__file__).parents[2] / "data" / "scheduler" / "kube"
TS = datetime(2026, 11, 1)
KUEUE = "kueue.x-k8s.io"


def load(name: str) -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = json.loads((DATA / f"{name}.json").read_text())
    return docs


def workload(name: str, status_file: str, created: str) -> dict[str, Any]:
    """A Workload around a recorded `status` (the docs record only the status; metadata and spec are ours)."""
    status = load(status_file)[0]["status"]
    return {
        "apiVersion": f"{KUEUE}/v1beta2",
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "default", "creationTimestamp": created},
        "spec": {
            "queueName": "tas-user-queue",
            "priority": 0,
            "podSets": [
                {
                    "name": "main",
                    "count": 2,
                    "template": {
                        "spec": {"containers": [{"name": "c", "resources": {"requests": {"nvidia.com/gpu": "1"}}}]}
                    },
                }
            ],
        },
        "status": status,
    }


def fake_kube() -> FakeKube:
    """The recorded ClusterQueues, LocalQueues, Workloads, Queues and PodGroups the kube tests serve."""
    k = FakeKube()
    for name in (
        "tas_sample-gpu-queues",
        "admin_single-clusterqueue-setup",
        "cluster_queue.md.block06.clusterqueue-cohort-a",
    ):
        for obj in load(name):
            if obj["kind"] in ("ClusterQueue", "LocalQueue"):
                k.add(obj)
    k.add(workload("pending", "troubleshooting_jobs.md.block02.workload-status-pending-quota", "2024-03-21T13:40:00Z"))
    k.add(
        workload(
            "inadmissible",
            "troubleshooting_jobs.md.block05.workload-status-inadmissible-missing-localqueue",
            "2024-03-21T13:55:00Z",
        )
    )
    k.add(
        workload("evicted", "troubleshooting_jobs.md.block06.workload-status-preempted-evicted", "2024-03-21T15:40:00Z")
    )
    admitted = workload(
        "admitted", "troubleshooting_jobs.md.block02.workload-status-pending-quota", "2024-03-19T20:40:17Z"
    )
    admitted["status"] = {
        "admission": {"clusterQueue": "cluster-queue"},
        "conditions": [  # block01 (.txt: elided)
            {
                "lastTransitionTime": "2024-03-19T20:49:17Z",
                "message": "Quota reserved in ClusterQueue cluster-queue",
                "reason": "QuotaReserved",
                "status": "True",
                "type": "QuotaReserved",
            },
            {
                "lastTransitionTime": "2024-03-19T20:49:17Z",
                "message": "The workload is admitted",
                "reason": "Admitted",
                "status": "True",
                "type": "Admitted",
            },
        ],
    }
    k.add(admitted)
    for name in (
        "volcano-apis_artifacts_queue",
        "volcano_docs_capacity-plugin_queue1-deserved",
        "volcano_example_hierarchical-jobs_queues",
        "volcano-apis_artifacts_podgroup",
    ):
        for obj in load(name):
            k.add(obj)
    return k


@contextmanager
def serving_recorded(*tokens: str) -> Iterator[tuple[FakeKube, str]]:
    """The recorded objects served on 127.0.0.1 (plain HTTP), accepting only these bearer tokens."""
    kube = fake_kube()
    kube.tokens = set(tokens)
    with serve(kube) as url:
        yield kube, url
