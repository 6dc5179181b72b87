"""Volcano (`scheduling.volcano.sh/v1beta1`): Queues (capability, deserved, guarantee, allocated) and PodGroups.

A Queue's GPU limit is `spec.capability["nvidia.com/gpu"]` (a QUOTA_SNAPSHOTS row of kind `queue`;
absent = unlimited); `VOLCANO_QUEUES` has every field. PodGroups carry no admission timestamps:
the wait is the `Scheduled` condition's `lastTransitionTime` minus creation, when present.
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
from collectors.kube.kueue import GPU, _conditions, _frame, _name, _time
from collectors.slurm.writes import QuotaChange, QuotaTarget, checked_dry_write, guarded_write
from gpusteward import tables
from gpusteward.errors import PermanentError

GROUP_VERSION = "scheduling.volcano.sh/v1beta1"
FIELDS = {"capability": ("capability",), "deserved": ("deserved",), "guarantee": ("guarantee", "resource")}

VOLCANO_QUEUES = tables.schema(
    {
        "cluster": pl.Utf8,
        "ts": tables.TS,
        "name": pl.Utf8,
        "parent": pl.Utf8,
        "weight": pl.Int64,
        "state": pl.Utf8,
        "capability": pl.Int64,
        "deserved": pl.Int64,
        "guarantee": pl.Int64,
        "allocated": pl.Int64,
        "pending": pl.Int32,
        "running": pl.Int32,
    }
)
PODGROUPS = tables.schema(
    {
        "cluster": pl.Utf8,
        "namespace": pl.Utf8,
        "name": pl.Utf8,
        "queue": pl.Utf8,
        "phase": pl.Utf8,
        "min_member": pl.Int32,
        "gpus": pl.Int64,
        "gpu_equivalents": pl.Float64,  # whole-GPU equivalents of fractional minResources (MIG, vGPU cores); else null
        "created": tables.TS,
        "scheduled_at": tables.TS,
        "wait_s": pl.Float64,
        "reason": pl.Utf8,
        "message": pl.Utf8,
    }
)


def _dig(spec: Mapping[str, Any], path: tuple[str, ...]) -> Mapping[str, Any]:
    node: Any = spec
    for key in path:
        node = node.get(key) if isinstance(node, Mapping) else None
    return node if isinstance(node, Mapping) else {}


def queue_rows(
    items: list[Mapping[str, Any]], *, cluster: str, ts: datetime, gpu: str = GPU, source: str = "queues"
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(QUOTA_SNAPSHOTS of kind queue, VOLCANO_QUEUES) from Queue objects."""
    snaps, rows = [], []
    for q in items:
        spec, status = q.get("spec") or {}, q.get("status") or {}
        values = {f: quantity(_dig(spec, path).get(gpu), source=source) for f, path in FIELDS.items()}
        snaps.append((cluster, ts, "queue", _name(q), values["capability"], spec.get("priority")))
        rows.append(
            (
                cluster,
                ts,
                _name(q),
                spec.get("parent"),
                spec.get("weight"),
                status.get("state"),
                values["capability"],
                values["deserved"],
                values["guarantee"],
                quantity((status.get("allocated") or {}).get(gpu), source=source),
                status.get("pending"),
                status.get("running"),
            )
        )
    return _frame(snaps, tables.QUOTA_SNAPSHOTS), _frame(rows, VOLCANO_QUEUES)


def podgroup_rows(
    items: list[Mapping[str, Any]], *, cluster: str, gpu: str = GPU, source: str = "podgroups"
) -> pl.DataFrame:
    rows = []
    for pg in items:
        meta, spec, status = pg.get("metadata") or {}, pg.get("spec") or {}, pg.get("status") or {}
        cond = _conditions(pg)
        created = _time(meta.get("creationTimestamp"))
        scheduled = cond.get("Scheduled") or {}
        at = _time(scheduled.get("lastTransitionTime")) if scheduled.get("status") == "True" else None
        latest = cond.get("Unschedulable") or scheduled
        rows.append(
            (
                cluster,
                meta.get("namespace"),
                meta.get("name"),
                spec.get("queue"),
                status.get("phase"),
                spec.get("minMember"),
                quantity((spec.get("minResources") or {}).get(gpu), source=source),
                gpu_equivalents(spec.get("minResources") or {}, gpu, source=source),
                created,
                at,
                (at - created).total_seconds() if at and created else None,
                latest.get("reason"),
                latest.get("message"),
            )
        )
    return _frame(rows, PODGROUPS)


@dataclass
class VolcanoReader:
    api: KubeApi
    cluster: str
    gpu: str = GPU

    def quotas(self, ts: datetime) -> tuple[CollectedBatch, pl.DataFrame]:
        snaps, queues = queue_rows(
            self.api.list(f"/apis/{GROUP_VERSION}/queues"), cluster=self.cluster, ts=ts, gpu=self.gpu
        )
        batch = CollectedBatch(source=f"volcano {self.api.base_url} queues")
        batch.add("quota_snapshots", snaps)
        return batch, queues

    def podgroups(self) -> pl.DataFrame:
        return podgroup_rows(self.api.list(f"/apis/{GROUP_VERSION}/podgroups"), cluster=self.cluster, gpu=self.gpu)


@dataclass
class VolcanoQuotaWriter:
    """A Queue's GPU entry in `capability` (default), `deserved` or `guarantee.resource`, by guarded JSON Patch."""

    api: KubeApi
    server_dry_run: bool = False

    @property
    def transport(self) -> str:
        return f"volcano {self.api.base_url}" + (" (dryRun=All)" if self.server_dry_run else "")

    def _where(self, target: QuotaTarget) -> tuple[str, tuple[str, ...], str]:
        field = target.field or "capability"
        if target.kind != "queue" or field not in FIELDS:
            raise PermanentError(f"Volcano GPU limits are on a queue's {'/'.join(FIELDS)}, not {target}")
        return f"/apis/{GROUP_VERSION}/queues/{target.name}", FIELDS[field], target.resource or GPU

    def read_gpu_limit(self, target: QuotaTarget) -> int | None:
        path, fields, gpu = self._where(target)
        return quantity(_dig(self.api.get(path).get("spec") or {}, fields).get(gpu), source=f"queue {target.name}")

    def set_gpu_limit(self, target: QuotaTarget, *, expected: int | None, new: int | None) -> QuotaChange:
        path, fields, gpu = self._where(target)

        def write(_current: int | None, value: int | None) -> str:
            spec = self.api.get(path).get("spec") or {}
            ops: list[dict[str, Any]] = []
            node: Any = spec
            pointer = "/spec"
            for key in fields:  # create the map on the way when it is missing
                pointer += f"/{escape(key)}"
                if not isinstance(node, Mapping) or key not in node:
                    ops.append({"op": "add", "path": pointer, "value": {}})
                    node = {}
                else:
                    node = node[key]
            entry = f"{pointer}/{escape(gpu)}"
            if gpu in node:
                ops.insert(0, {"op": "test", "path": entry, "value": node[gpu]})
                ops.append(
                    {"op": "remove", "path": entry}
                    if value is None
                    else {"op": "replace", "path": entry, "value": str(value)}
                )
            elif value is not None:
                ops.append({"op": "add", "path": entry, "value": str(value)})
            self.api.json_patch(path, ops, dry_run=self.server_dry_run)
            return f"patched {entry}"

        if self.server_dry_run:
            return checked_dry_write(self, target, expected=expected, new=new, write=write)
        return guarded_write(self, target, expected=expected, new=new, write=write)
