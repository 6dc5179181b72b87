"""Reclaim actions against the Kubernetes API stand-in: a Workload deactivated, a Deployment scaled, once."""

from __future__ import annotations

import pytest

from collectors.kube import KubeApi
from collectors.kube.reclaim import KubeReclaimActions
from collectors.reclaim_actions import ReclaimTarget
from gpusteward.errors import PermanentError, TransientError
from tests.collectors.kube.server import FakeKube

WORKLOAD = "/apis/kueue.x-k8s.io/v1beta2/namespaces/default/workloads/admitted"
DEPLOYMENT = "/apis/apps/v1/namespaces/serving/deployments/chat"


def _deployment(replicas: int) -> dict[str, object]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "chat", "namespace": "serving"},
            "spec": {"replicas": replicas}}


def test_a_kueue_job_is_deactivated_once(kube: FakeKube, api: KubeApi) -> None:
    actions = KubeReclaimActions(api)
    first = actions.act(ReclaimTarget("k8s", "default/admitted", "requeue"))
    assert (first.state, first.transport) == ("done", "kueue")
    assert kube.objects[WORKLOAD]["spec"]["active"] is False
    again = actions.act(ReclaimTarget("k8s", "default/admitted", "cancel"))  # a retry: no second patch
    assert (again.state, again.detail) == ("done", "Workload default/admitted is inactive already")
    assert [path for path, _ops, _dry in kube.patches] == [WORKLOAD]
    gone = actions.act(ReclaimTarget("k8s", "default/finished-long-ago", "cancel"))
    assert gone.state == "already_ended"
    with pytest.raises(PermanentError, match="namespace/name"):
        actions.act(ReclaimTarget("k8s", "42", "cancel"))


def test_a_deployment_is_scaled_down_guarded_and_idempotent(kube: FakeKube, api: KubeApi) -> None:
    kube.add(_deployment(3))
    actions = KubeReclaimActions(api, {"chat": "serving/chat"})
    scaled = actions.act(ReclaimTarget("k8s", "serving/chat-7", "scale", service="chat", replicas=1))
    assert (scaled.state, scaled.detail) == ("done", "Deployment serving/chat scaled 3 -> 1")
    assert kube.objects[DEPLOYMENT]["spec"]["replicas"] == 1
    assert kube.patches[-1][1][0] == {"op": "test", "path": "/spec/replicas", "value": 3}
    again = actions.act(ReclaimTarget("k8s", "serving/chat-8", "scale", service="chat", replicas=1))
    assert again.detail == "Deployment serving/chat has 1 replicas already"
    assert len(kube.patches) == 1
    with pytest.raises(PermanentError, match="no deployment to scale"):
        actions.act(ReclaimTarget("k8s", "serving/x", "scale", service="search", replicas=1))


def test_an_autoscaler_racing_the_scale_makes_it_try_again(kube: FakeKube, api: KubeApi) -> None:
    kube.add(_deployment(4))

    def autoscaler(path: str) -> None:
        if path == DEPLOYMENT:
            kube.objects[path]["spec"]["replicas"] = 5

    kube.after_get = autoscaler
    with pytest.raises(TransientError, match="changed while it was scaled"):
        KubeReclaimActions(api, {"chat": "serving/chat"}).act(
            ReclaimTarget("k8s", "serving/chat-7", "scale", service="chat", replicas=1))
    assert kube.objects[DEPLOYMENT]["spec"]["replicas"] == 5  # nothing written over the autoscaler's change
