"""Reclaim actions on Kubernetes: deactivate a Kueue Workload, scale an inference Deployment down.

- requeue, suspend, cancel of a Kueue job: `spec.active: false` on its Workload. Kueue then evicts
  it (condition Evicted, reason InactiveWorkload) and frees its quota; the job's pods are stopped
  and it is not admitted again until someone sets `active` back to true (Kueue's own
  "deactivate" and the `kueuectl stop workload` command do the same). A job record names its
  Workload as `namespace/name`.
- scale: the Deployment serving an inference service (`reclaim.deployments`) set to the policy's
  replicas, guarded by a JSON Patch `test` of the replicas read just before: a concurrent change
  (an autoscaler) makes the API server refuse the patch, and the service tries again next turn.
Both are idempotent: a Workload already inactive, or a Deployment already at (or below) its
replicas, is `done` without a patch; a Workload or Deployment that is gone is `already_ended`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from collectors.kube.api import KubeApi, PatchRefusedError, escape
from collectors.reclaim_actions import ActionResult, ReclaimTarget
from gpusteward.errors import PermanentError, TransientError

KUEUE_API = "kueue.x-k8s.io/v1beta2"


@dataclass
class KubeReclaimActions:
    """Reclaim actions on one Kubernetes cluster. `deployments`: service -> `namespace/name`."""

    api: KubeApi
    deployments: dict[str, str] = field(default_factory=dict)
    kueue_api: str = KUEUE_API

    @property
    def transport(self) -> str:
        return "kubernetes"

    def act(self, target: ReclaimTarget) -> ActionResult:
        if target.action == "scale":
            return self._scale(target)
        if target.action in ("requeue", "suspend", "cancel"):
            return self._deactivate(target)
        raise PermanentError(f"Kubernetes cannot {target.action} a workload")

    def _get(self, path: str) -> dict[str, object] | None:
        try:
            return self.api.get(path)
        except PermanentError as exc:
            if "HTTP 404" in str(exc):
                return None
            raise

    def _deactivate(self, target: ReclaimTarget) -> ActionResult:
        namespace, _, name = target.job_id.partition("/")
        if not name:
            raise PermanentError(f"job {target.job_id!r}: a Kubernetes job record names its Workload as namespace/name")
        path = f"/apis/{self.kueue_api}/namespaces/{escape(namespace)}/workloads/{escape(name)}"
        workload = self._get(path)
        if workload is None:
            return ActionResult("already_ended", "kueue", f"Workload {target.job_id} is gone")
        spec = workload.get("spec")
        if isinstance(spec, dict) and spec.get("active") is False:
            return ActionResult("done", "kueue", f"Workload {target.job_id} is inactive already")
        self.api.json_patch(path, [{"op": "add", "path": "/spec/active", "value": False}])
        return ActionResult("done", "kueue", f"Workload {target.job_id}: spec.active set to false")

    def _scale(self, target: ReclaimTarget) -> ActionResult:
        where = self.deployments.get(target.service or "")
        if where is None or "/" not in where:
            raise PermanentError(
                f"service {target.service!r}: no deployment to scale (reclaim.deployments names it as namespace/name)"
            )
        if target.replicas is None:
            raise PermanentError(f"scale of {where}: the policy names no replicas to keep")
        namespace, _, name = where.partition("/")
        path = f"/apis/apps/v1/namespaces/{escape(namespace)}/deployments/{escape(name)}"
        deployment = self._get(path)
        if deployment is None:
            return ActionResult("already_ended", "kubernetes", f"Deployment {where} is gone")
        spec = deployment.get("spec")
        current = spec.get("replicas") if isinstance(spec, dict) else None
        current = 1 if current is None else int(str(current))  # the API server's default is 1
        if current <= target.replicas:
            return ActionResult("done", "kubernetes", f"Deployment {where} has {current} replicas already")
        try:
            self.api.json_patch(path, [{"op": "test", "path": "/spec/replicas", "value": current},
                                       {"op": "replace", "path": "/spec/replicas", "value": target.replicas}])
        except PatchRefusedError as exc:
            raise TransientError(f"Deployment {where} changed while it was scaled; read again next turn: {exc}") \
                from exc
        return ActionResult("done", "kubernetes", f"Deployment {where} scaled {current} -> {target.replicas}")
