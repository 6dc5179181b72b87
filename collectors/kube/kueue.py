"""Kueue (`kueue.x-k8s.io` v1beta2, and v1beta1 for clusters before 0.15): queues, quotas, workloads.

ClusterQueue GPU quota = the `nominalQuota` of the GPU resource summed over flavors (a
QUOTA_SNAPSHOTS row of kind `clusterqueue`); the per-flavor detail with usage is `KUEUE_QUOTAS`.
A Workload's admission wait is `Admitted` (else `QuotaReserved`) `lastTransitionTime` minus its
creation; a Workload keeps only the latest transition of each condition, so history needs polling.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import polars as pl

from collectors.batch import CollectedBatch
from collectors.kube.api import KubeApi, escape, quantity
from collectors.kube.fractions import gpu_equivalents
from collectors.slurm.writes import QuotaChange, QuotaConflictError, QuotaTarget, checked_dry_write, guarded_write
from gpusteward import tables
from gpusteward.errors import InputError, PermanentError

GROUP = "kueue.x-k8s.io"
GPU = "nvidia.com/gpu"

KUEUE_QUOTAS = tables.schema(
    {
        "cluster": pl.Utf8,
        "ts": tables.TS,
        "cluster_queue": pl.Utf8,
        "cohort": pl.Utf8,
        "flavor": pl.Utf8,
        "resource": pl.Utf8,
        "nominal": pl.Int64,
        "borrowing_limit": pl.Int64,
        "lending_limit": pl.Int64,
        "used": pl.Int64,
        "borrowed": pl.Int64,
    }
)
LOCAL_QUEUES = tables.schema(
    {
        "cluster": pl.Utf8,
        "namespace": pl.Utf8,
        "name": pl.Utf8,
        "cluster_queue": pl.Utf8,
        "pending": pl.Int32,
        "admitted": pl.Int32,
    }
)
COHORTS = tables.schema({"cluster": pl.Utf8, "name": pl.Utf8, "parent": pl.Utf8})
WORKLOADS = tables.schema(
    {
        "cluster": pl.Utf8,
        "namespace": pl.Utf8,
        "name": pl.Utf8,
        "queue": pl.Utf8,
        "cluster_queue": pl.Utf8,
        "priority": pl.Int64,
        "gpus": pl.Int64,
        "gpu_equivalents": pl.Float64,  # whole-GPU equivalents of fractional requests (MIG, core shares); else null
        "created": tables.TS,
        "admitted_at": tables.TS,
        "admission_wait_s": pl.Float64,
        "status": pl.Utf8,
        "reason": pl.Utf8,
        "message": pl.Utf8,
    }
)
EVICTIONS = tables.schema(
    {
        "cluster": pl.Utf8,
        "namespace": pl.Utf8,
        "name": pl.Utf8,
        "ts": tables.TS,
        "reason": pl.Utf8,
        "preempted_reason": pl.Utf8,
        "message": pl.Utf8,
        "count": pl.Int32,
    }
)


def _time(value: Any) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(str(value).replace("Z", "+00:00")).replace(tzinfo=None)


def _conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    return {str(c.get("type")): c for c in (obj.get("status") or {}).get("conditions") or []}


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name"))


def _frame(rows: list[tuple[Any, ...]], schema: pl.Schema) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=schema, orient="row") if rows else tables.empty(schema)


def cluster_queue_rows(
    items: list[Mapping[str, Any]], *, cluster: str, ts: datetime, gpu: str = GPU, source: str = "clusterqueues"
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(QUOTA_SNAPSHOTS of kind clusterqueue, KUEUE_QUOTAS) from ClusterQueue objects."""
    snaps, detail = [], []
    for cq in items:
        spec = cq.get("spec") or {}
        cohort = spec.get("cohortName") or spec.get("cohort")  # v1beta2 | v1beta1
        usage = {
            (f.get("name"), r.get("name")): r
            for f in (cq.get("status") or {}).get("flavorsUsage") or []
            for r in f.get("resources") or []
        }
        total: int | None = None
        for group in spec.get("resourceGroups") or []:
            for flavor in group.get("flavors") or []:
                for res in flavor.get("resources") or []:
                    name = str(res.get("name"))
                    q = [
                        quantity(res.get(k), source=source) if name == gpu else None
                        for k in ("nominalQuota", "borrowingLimit", "lendingLimit")
                    ]
                    used = usage.get((flavor.get("name"), name)) or {}
                    if name == gpu:
                        total = (total or 0) + (q[0] or 0)
                        detail.append(
                            (
                                cluster,
                                ts,
                                _name(cq),
                                cohort,
                                flavor.get("name"),
                                name,
                                *q,
                                quantity(used.get("total"), source=source),
                                quantity(used.get("borrowed"), source=source),
                            )
                        )
        snaps.append((cluster, ts, "clusterqueue", _name(cq), total, None))
    return _frame(snaps, tables.QUOTA_SNAPSHOTS), _frame(detail, KUEUE_QUOTAS)


def workload_rows(
    items: list[Mapping[str, Any]], *, cluster: str, gpu: str = GPU, source: str = "workloads"
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(WORKLOADS, EVICTIONS) from Workload objects."""
    rows, evictions = [], []
    for wl in items:
        meta, spec, status = wl.get("metadata") or {}, wl.get("spec") or {}, wl.get("status") or {}
        cond = _conditions(wl)
        created = _time(meta.get("creationTimestamp"))
        admitted = cond.get("Admitted") or {}
        admitted_at = _time(admitted.get("lastTransitionTime")) if admitted.get("status") == "True" else None
        wait = (admitted_at - created).total_seconds() if admitted_at and created else None
        state, latest = _status(cond)
        gpus = 0
        equivalents: float | None = None
        for ps in spec.get("podSets") or []:
            for c in ((ps.get("template") or {}).get("spec") or {}).get("containers") or []:
                requests = (c.get("resources") or {}).get("requests") or {}
                n = quantity(requests.get(gpu), source=source) or 0
                gpus += n * int(ps.get("count") or 1)
                part = gpu_equivalents(requests, gpu, source=source)
                if part is not None:
                    equivalents = (equivalents or 0.0) + part * int(ps.get("count") or 1)
        ns = meta.get("namespace")
        rows.append(
            (
                cluster,
                ns,
                meta.get("name"),
                spec.get("queueName"),
                (status.get("admission") or {}).get("clusterQueue"),
                spec.get("priority"),
                gpus,
                equivalents,
                created,
                admitted_at,
                wait,
                state,
                latest.get("reason"),
                latest.get("message"),
            )
        )
        evicted = cond.get("Evicted")
        if evicted and evicted.get("status") == "True":
            preempted = cond.get("Preempted") or {}
            evictions.append(
                (
                    cluster,
                    ns,
                    meta.get("name"),
                    _time(evicted.get("lastTransitionTime")),
                    evicted.get("reason"),
                    preempted.get("reason"),
                    evicted.get("message"),
                    1,
                )
            )
        for past in (status.get("schedulingStats") or {}).get("evictions") or []:
            evictions.append(
                (
                    cluster,
                    ns,
                    meta.get("name"),
                    None,
                    past.get("reason"),
                    past.get("underlyingCause") or None,
                    None,
                    past.get("count"),
                )
            )
    return _frame(rows, WORKLOADS), _frame(evictions, EVICTIONS)


def _status(cond: Mapping[str, Mapping[str, Any]]) -> tuple[str, Mapping[str, Any]]:
    for kind, label in (("Finished", "finished"), ("Evicted", "evicted"), ("Admitted", "admitted")):
        if (cond.get(kind) or {}).get("status") == "True":
            return label, cond[kind]
    reserved = cond.get("QuotaReserved") or {}
    if reserved.get("status") == "True":
        return "quota-reserved", reserved
    if reserved.get("reason") == "Inadmissible":
        return "inadmissible", reserved
    return "pending", reserved


@dataclass
class KueueReader:
    api: KubeApi
    cluster: str
    version: str = "v1beta2"
    gpu: str = GPU

    def _path(self, plural: str) -> str:
        return f"/apis/{GROUP}/{self.version}/{plural}"

    def quotas(self, ts: datetime) -> tuple[CollectedBatch, pl.DataFrame]:
        snaps, detail = cluster_queue_rows(
            self.api.list(self._path("clusterqueues")), cluster=self.cluster, ts=ts, gpu=self.gpu
        )
        batch = CollectedBatch(source=f"kueue {self.api.base_url} clusterqueues")
        batch.add("quota_snapshots", snaps)
        return batch, detail

    def local_queues(self) -> pl.DataFrame:
        rows = [
            (
                self.cluster,
                (q.get("metadata") or {}).get("namespace"),
                _name(q),
                (q.get("spec") or {}).get("clusterQueue"),
                (q.get("status") or {}).get("pendingWorkloads"),
                (q.get("status") or {}).get("admittedWorkloads"),
            )
            for q in self.api.list(self._path("localqueues"))
        ]
        return _frame(rows, LOCAL_QUEUES)

    def cohorts(self) -> pl.DataFrame:
        if self.version == "v1beta1":
            return tables.empty(COHORTS)  # Cohort objects are v1beta2 (and v1alpha1) only
        rows = [
            (self.cluster, _name(c), (c.get("spec") or {}).get("parentName"))
            for c in self.api.list(self._path("cohorts"))
        ]
        return _frame(rows, COHORTS)

    def workloads(self) -> tuple[pl.DataFrame, pl.DataFrame]:
        return workload_rows(self.api.list(self._path("workloads")), cluster=self.cluster, gpu=self.gpu)


@dataclass
class KueueQuotaWriter:
    """`nominalQuota` of a flavor's GPU resource on a ClusterQueue, as a JSON Patch guarded by `test` ops.

    `server_dry_run=True` sends `dryRun=All`: the API server validates and admits the patch but stores
    nothing (the read-back then shows the old value, so the change is reported as not applied).
    """

    api: KubeApi
    version: str = "v1beta2"
    server_dry_run: bool = False

    @property
    def transport(self) -> str:
        return f"kueue {self.api.base_url}" + (" (dryRun=All)" if self.server_dry_run else "")

    def _locate(self, target: QuotaTarget) -> tuple[str, str, Any]:
        """(object path, JSON pointer of the resource entry, raw nominalQuota). Without a flavor, the
        ClusterQueue must have exactly one flavor with the resource (as the snapshot's sum then is it)."""
        if target.kind != "clusterqueue":
            raise PermanentError(f"Kueue GPU limits are on a clusterqueue (with a flavor), not {target}")
        path = f"/apis/{GROUP}/{self.version}/clusterqueues/{target.name}"
        cq = self.api.get(path)
        resource = target.resource or GPU
        found: list[tuple[str, str, Any]] = []
        for g, group in enumerate((cq.get("spec") or {}).get("resourceGroups") or []):
            for f, flavor in enumerate(group.get("flavors") or []):
                if target.flavor and flavor.get("name") != target.flavor:
                    continue
                for r, res in enumerate(flavor.get("resources") or []):
                    if res.get("name") == resource:
                        pointer = f"/spec/resourceGroups/{g}/flavors/{f}/resources/{r}"
                        found.append((str(flavor.get("name")), pointer, res.get("nominalQuota")))
        if len(found) == 1:
            return path, found[0][1], found[0][2]
        if not found:
            where = f"flavor {target.flavor}" if target.flavor else "any flavor"
            raise PermanentError(f"{self.transport}: {target}: no {resource} in {where}")
        flavors = ", ".join(name for name, _, _ in found)
        raise PermanentError(f"{self.transport}: {target}: {resource} is in several flavors ({flavors}); name one")

    def read_gpu_limit(self, target: QuotaTarget) -> int | None:
        return quantity(self._locate(target)[2], source=f"clusterqueue {target.name}")

    def set_gpu_limit(self, target: QuotaTarget, *, expected: int | None, new: int | None) -> QuotaChange:
        if new is None:
            raise InputError(self.transport, "a Kueue nominalQuota cannot be unlimited")

        def write(_current: int | None, value: int | None) -> str:
            path, pointer, raw = self._locate(target)
            if quantity(raw, source=path) != expected:  # changed since the guard read
                raise QuotaConflictError(target, self.transport, expected, quantity(raw, source=path))
            ops = [
                {"op": "test", "path": f"{pointer}/name", "value": target.resource or GPU},
                {"op": "test", "path": f"{pointer}/nominalQuota", "value": raw},
                {"op": "replace", "path": f"{pointer}/nominalQuota", "value": str(value)},
            ]
            self.api.json_patch(path, ops, dry_run=self.server_dry_run)
            return f"patched {escape(pointer)}"

        if self.server_dry_run:
            return checked_dry_write(self, target, expected=expected, new=new, write=write)
        return guarded_write(self, target, expected=expected, new=new, write=write)
