"""Kueue Workloads as job records: the same JOBS rows (and JOB_EVENTS) a Slurm job feed returns.

One Workload (namespaced, one per Job, JobSet, RayJob...) is one record:

- `job_ref` = `namespace/name`, the Workload's own name (a reclaim action deactivates it by that name);
  `job_id` = a stable 63-bit digest of it (the warehouse keys jobs on a number), so reading the same
  Workload again replaces its record instead of adding one; `submit_time` = `metadata.creationTimestamp`
  (a Workload deleted and made again under the same name is a new record);
- `name` = the owner's name (the Job a person submitted; `metadata.ownerReferences[0].name`), else the
  Workload's; `qos` = the LocalQueue (`spec.queueName`); `partition` = the ClusterQueue it was admitted
  to (`status.admission.clusterQueue`), else the one its LocalQueue points at; `account` = the value of
  the configured team label when the Workload carries it, else that ClusterQueue (teams list accounts);
- GPUs = the sum over `spec.podSets` of `count` x the containers' (and init containers') `nvidia.com/gpu`
  requests; `gpu_equivalents` for fractional resources (MIG, core shares: collectors.kube.fractions);
  `gpu_type` = the ResourceFlavor the GPU resource was assigned (`podSetAssignments[].flavors`);
- times and state from the conditions (each keeps only its latest transition, so a record describes the
  Workload's latest run): start = `Admitted` true; `Finished` true ends it (reason `Succeeded` ->
  COMPLETED, else FAILED); admitted -> RUNNING; an `Evicted` true while not admitted: a Workload set
  inactive (`spec.active: false`, reasons `InactiveWorkload`, `Deactivated`) is CANCELLED, ended then;
  any other eviction (`Preempted`, `PodsReadyTimeout`, ...) puts it back in the queue: PENDING again, the
  eviction kept as a `preempt` or `requeue` JOB_EVENTS row at its time (the run's start is gone: Kueue
  keeps only the latest transition of each condition); otherwise PENDING (a Workload without a status
  yet is one Kueue has not looked at: pending, as the API server has just stored it);
- `labels` = `metadata.labels` as a JSON object; `reservation` = "" (Kueue has no advanced reservations);
  `time_limit_min` from `spec.maximumExecutionTimeSeconds`.

A Workload whose shape is wrong (metadata without a name, namespace or creation time; a status, condition
list or pod set that is not what the CRD says; a time that does not parse) raises an InputError naming the
Workload and the field: the whole read is refused, so nothing partial is stored.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

from collectors.batch import CollectedBatch
from collectors.kube.api import KubeApi, quantity
from collectors.kube.fractions import gpu_equivalents
from collectors.sacct import _events
from gpusteward import tables
from gpusteward.errors import InputError

GROUP = "kueue.x-k8s.io"
GPU = "nvidia.com/gpu"

_FINISHED = {"Succeeded": "COMPLETED"}  # any other Finished reason (Failed, ...) is FAILED
_INACTIVE = ("InactiveWorkload", "Deactivated")  # Evicted reasons of a Workload set inactive


def workload_id(ref: str) -> int:
    """The job id of the Workload `namespace/name`: the first 63 bits of its BLAKE2b digest (stable
    across reads, processes and versions)."""
    return int.from_bytes(hashlib.blake2b(ref.encode(), digest_size=8).digest(), "big") >> 1


class _Reading:
    """One Workload being read, so every error names it and the field."""

    def __init__(self, obj: Any, source: str, index: int) -> None:
        self.where = f"{source} item {index}"
        if not isinstance(obj, Mapping):
            raise InputError(self.where, f"a Workload must be a JSON object, got {type(obj).__name__}")
        self.obj = obj
        meta = self.mapping(obj, "metadata", required=True)
        ns, name = meta.get("namespace"), meta.get("name")
        if not isinstance(ns, str) or not ns or not isinstance(name, str) or not name:
            raise InputError(self.where, "metadata.namespace and metadata.name must be non-empty strings")
        self.ref = f"{ns}/{name}"
        self.where = f"{source} Workload {self.ref}"
        self.meta = meta

    def fail(self, field: str, message: str) -> InputError:
        return InputError(self.where, f"{field}: {message}")

    def mapping(self, parent: Mapping[str, Any], key: str, *, required: bool = False) -> Mapping[str, Any]:
        value = parent.get(key)
        if value is None and not required:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(key, f"expected an object, got {type(value).__name__}")
        return value

    def items(self, parent: Mapping[str, Any], key: str) -> Sequence[Mapping[str, Any]]:
        value = parent.get(key)
        if value is None:
            return []
        if not isinstance(value, list) or not all(isinstance(v, Mapping) for v in value):
            raise self.fail(key, "expected a list of objects")
        return value

    def time(self, value: Any, field: str) -> datetime:
        if not isinstance(value, str) or not value:
            raise self.fail(field, f"expected an RFC 3339 time, got {value!r}")
        try:
            moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            raise self.fail(field, f"{value!r} is not an RFC 3339 time") from None
        if moment.tzinfo is not None:
            moment = moment.astimezone(UTC)
        return moment.replace(tzinfo=None)

    def count(self, value: Any, field: str) -> int:
        if value is None:
            return 1  # the CRD's default
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise self.fail(field, f"expected a whole number >= 0, got {value!r}")
        return value


def _conditions(w: _Reading, status: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for i, cond in enumerate(w.items(status, "conditions")):
        kind, state = cond.get("type"), cond.get("status")
        if not isinstance(kind, str) or state not in ("True", "False", "Unknown"):
            raise w.fail(f"status.conditions[{i}]", "needs a type and a status of True, False or Unknown")
        out[kind] = cond
    return out


def _true(cond: Mapping[str, Mapping[str, Any]], kind: str) -> Mapping[str, Any] | None:
    found = cond.get(kind)
    return found if found is not None and found.get("status") == "True" else None


def _gpus(w: _Reading, spec: Mapping[str, Any], gpu: str) -> tuple[int, float | None]:
    whole, equivalents = 0, None
    for p, podset in enumerate(w.items(spec, "podSets")):
        count = w.count(podset.get("count"), f"spec.podSets[{p}].count")
        pod = w.mapping(w.mapping(podset, "template"), "spec")
        for kind in ("initContainers", "containers"):
            for c, container in enumerate(w.items(pod, kind)):
                requests = w.mapping(w.mapping(container, "resources"), "requests")
                where = f"{w.where} spec.podSets[{p}] {kind}[{c}]"
                n = quantity(requests.get(gpu), source=where) or 0
                part = gpu_equivalents(requests, gpu, source=where)
                if kind == "initContainers":
                    continue  # init containers run before the others: their GPUs are not held beside them
                whole += n * count
                if part is not None:
                    equivalents = (equivalents or 0.0) + part * count
    return whole, equivalents


def _flavor(w: _Reading, admission: Mapping[str, Any], gpu: str) -> str | None:
    flavors = sorted({
        str(flavor)
        for a in w.items(admission, "podSetAssignments")
        for resource, flavor in w.mapping(a, "flavors").items()
        if resource == gpu or resource.startswith("nvidia.com/mig-")
    })
    return ",".join(flavors) or None


def _labels(w: _Reading) -> dict[str, str]:
    labels = w.mapping(w.meta, "labels")
    if not all(isinstance(v, str) for v in labels.values()):
        raise w.fail("metadata.labels", "label values must be strings")
    return dict(labels)


def workload_record(
    obj: Any, *, cluster: str, local_queues: Mapping[tuple[str, str], str], team_label: str = "",
    gpu: str = GPU, source: str = "workloads", index: int = 0,
) -> dict[str, Any]:
    """The JOBS row of one Workload object, with `_evicted` (time, event, state, reason) of the eviction of a
    Workload queued again (its record is pending again; the eviction becomes a JOB_EVENTS row)."""
    w = _Reading(obj, source, index)
    spec = w.mapping(w.obj, "spec")
    status = w.mapping(w.obj, "status")
    cond = _conditions(w, status)
    admission = w.mapping(status, "admission")
    created = w.time(w.meta.get("creationTimestamp"), "metadata.creationTimestamp")
    labels = _labels(w)
    ns = w.ref.partition("/")[0]
    queue = spec.get("queueName")
    cluster_queue = admission.get("clusterQueue") or local_queues.get((ns, str(queue)))
    owners = w.items(w.meta, "ownerReferences")
    name = owners[0].get("name") if owners and owners[0].get("name") else w.ref.partition("/")[2]
    gpus, equivalents = _gpus(w, spec, gpu)

    admitted, finished, evicted = _true(cond, "Admitted"), _true(cond, "Finished"), _true(cond, "Evicted")
    requeued: tuple[datetime, str, str, Any] | None = None
    start = w.time(admitted["lastTransitionTime"], "Admitted.lastTransitionTime") if admitted else None
    end: datetime | None = None
    if finished is not None:
        state = _FINISHED.get(str(finished.get("reason")), "FAILED")
        end = w.time(finished.get("lastTransitionTime"), "Finished.lastTransitionTime")
        deciding: Mapping[str, Any] = finished
        past = status.get("accumulatedPastExecutionTimeSeconds")
        if start is None and isinstance(past, int) and not isinstance(past, bool):
            start = end - timedelta(seconds=past)  # admission already given back
    elif admitted is not None:
        state, deciding = "RUNNING", admitted
    elif evicted is not None and (spec.get("active") is False or evicted.get("reason") in _INACTIVE):
        state, deciding = "CANCELLED", evicted  # deactivated: Kueue will not admit it again
        end = w.time(evicted.get("lastTransitionTime"), "Evicted.lastTransitionTime")
        past = status.get("accumulatedPastExecutionTimeSeconds")
        if isinstance(past, int) and not isinstance(past, bool) and past > 0:
            start = end - timedelta(seconds=past)
    elif evicted is not None:
        state, deciding = "PENDING", evicted  # evicted and queued again: it waits (the eviction is an event)
        at = w.time(evicted.get("lastTransitionTime"), "Evicted.lastTransitionTime")
        kind = "preempt" if evicted.get("reason") == "Preempted" else "requeue"
        requeued = (at, kind, "PREEMPTED" if kind == "preempt" else "REQUEUED", evicted.get("reason"))
    else:
        state, deciding = "PENDING", cond.get("QuotaReserved") or {}
    limit = spec.get("maximumExecutionTimeSeconds")
    return {
        "cluster": cluster,
        "job_id": workload_id(w.ref),
        "job_ref": w.ref,
        "submit_time": created,
        "name": name,
        "user": None,
        "account": labels.get(team_label) if team_label and labels.get(team_label) else cluster_queue,
        "partition": cluster_queue,
        "qos": queue,
        "priority": spec.get("priority") if isinstance(spec.get("priority"), int) else None,
        "start_time": start,
        "end_time": end,
        "state": state,
        "reason": deciding.get("reason"),
        "gpus_requested": gpus,
        "gpus_allocated": gpus if start is not None else 0,
        "gpu_type": _flavor(w, admission, gpu),
        "time_limit_min": math.ceil(limit / 60) if isinstance(limit, int) and limit > 0 else None,
        "gpu_equivalents": equivalents,
        "reservation": "",
        "labels": json.dumps(labels, sort_keys=True, ensure_ascii=False),
        "_evicted": requeued,
    }


def workload_jobs(
    items: Sequence[Any], *, cluster: str, local_queues: Mapping[tuple[str, str], str], team_label: str = "",
    gpu: str = GPU, source: str = "workloads",
) -> CollectedBatch:
    """JOBS and JOB_EVENTS of Workload objects, as one batch; any malformed Workload refuses all of them."""
    rows = [
        workload_record(obj, cluster=cluster, local_queues=local_queues, team_label=team_label, gpu=gpu,
                        source=source, index=i)
        for i, obj in enumerate(items)
    ]
    records = [{k: v for k, v in r.items() if k != "_evicted"} for r in rows]
    jobs = tables.conform(pl.DataFrame(records, infer_schema_length=None), tables.JOBS) if rows \
        else tables.empty(tables.JOBS)
    evictions = [
        (r["cluster"], r["job_id"], ts, event, state, reason, r["gpus_requested"])
        for r in rows if r["_evicted"] is not None for ts, event, state, reason in [r["_evicted"]]
    ]
    batch = CollectedBatch(source=source)
    batch.add("jobs", jobs)
    batch.add("job_events", _events(jobs))
    if evictions:
        batch.add("job_events", pl.DataFrame(evictions, schema=tables.JOB_EVENTS, orient="row"))
    return batch


@dataclass
class KueueJobFeed:
    """Reads one Kueue cluster's Workloads (and its LocalQueues, for their ClusterQueue) as job records."""

    api: KubeApi
    cluster: str
    version: str = "v1beta2"
    team_label: str = ""
    gpu: str = GPU

    def _path(self, plural: str) -> str:
        return f"/apis/{GROUP}/{self.version}/{plural}"

    def jobs(self) -> CollectedBatch:
        """JOBS and JOB_EVENTS of every Workload the API server lists now."""
        queues = {}
        for q in self.api.list(self._path("localqueues")):
            meta, spec = q.get("metadata") or {}, q.get("spec") or {}
            if isinstance(meta, Mapping) and isinstance(spec, Mapping) and spec.get("clusterQueue"):
                queues[(str(meta.get("namespace")), str(meta.get("name")))] = str(spec["clusterQueue"])
        source = f"kueue {self.api.base_url}{self._path('workloads')}"
        return workload_jobs(self.api.list(self._path("workloads")), cluster=self.cluster, local_queues=queues,
                             team_label=self.team_label, gpu=self.gpu, source=source)
