"""Readers for slurmrestd and CLI shapes other than jobs (jobs are `collectors.sacct.read_sacct`).

Both families are read: v0.0.38 (Slurm 22.05, flat ints, QOS under the key `QOS`) and the
data_parser v0.0.39+ shapes (ints as `{set, infinite, number}`, QOS under `qos`).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import polars as pl

from collectors.sacct import _number  # the one reader of Slurm's number forms
from collectors.slurm.hostlist import expand, index_ranges
from gpusteward import tables
from gpusteward.errors import InputError

# Current use of GPUs against each quota holder (not a warehouse table: QUOTA_SNAPSHOTS has no usage column).
QUOTA_USAGE = tables.QUOTA_USAGE
# Which GPU (host, index) a running job holds, from slurmctld's gres_detail; joins DCGM's (host, gpu).
JOB_GPUS = tables.schema({"cluster": pl.Utf8, "job_id": pl.Int64, "host": pl.Utf8, "gpu": pl.Int16})

_GPU_IN_TRES = re.compile(r"(?:^|,)gres/gpu=(\d+)(?:,|$)")
_GRES_IDX = re.compile(r"gpu(?::[^:(]+)?:\d+\(IDX:([^)]*)\)")


def gpu_in_tres(text: str | None) -> int | None:
    """`gres/gpu=N` in a TRES string such as `cpu=1,gres/gpu=2,gres/gpu:h100=2`."""
    m = _GPU_IN_TRES.search(text or "")
    return int(m.group(1)) if m else None


def gpu_in_tres_list(items: Any) -> int | None:
    """The `gres/gpu` count in a TRES list `[{"type": "gres", "name": "gpu", "count": N}]`; none: null."""
    for item in items or []:
        if isinstance(item, Mapping) and item.get("type") == "gres" and item.get("name") == "gpu":
            count = _number(item.get("count"))
            return None if count is None or count < 0 else count
    return None


def _records(data: Any, keys: Sequence[str], source: str) -> list[Mapping[str, Any]]:
    if isinstance(data, Mapping):
        for key in keys:
            if isinstance(data.get(key), list):
                return [r for r in data[key] if isinstance(r, Mapping)]
    raise InputError(source, f"no {' or '.join(repr(k) for k in keys)} list in the answer")


def cluster_of(data: Any, default: str) -> str:
    meta = data.get("meta") if isinstance(data, Mapping) else None
    slurm = (meta or {}).get("slurm") or (meta or {}).get("Slurm") or {}
    return str(slurm.get("cluster") or default)


def qos_snapshots(data: Any, *, cluster: str, ts: datetime, source: str) -> pl.DataFrame:
    """QUOTA_SNAPSHOTS (kind qos) from `GET /slurmdb/vX/qos`: GrpTRES gres/gpu is `limits.max.tres.total`."""
    rows = []
    for qos in _records(data, ("QOS", "qos"), source):
        limit = gpu_in_tres_list(((qos.get("limits") or {}).get("max") or {}).get("tres", {}).get("total"))
        rows.append((cluster, ts, "qos", str(qos["name"]), limit, _number(qos.get("priority"))))
    return _frame(rows)


def association_snapshots(data: Any, *, cluster: str | None, ts: datetime, source: str) -> pl.DataFrame:
    """QUOTA_SNAPSHOTS (kind account) from `GET /slurmdb/vX/associations`: account rows (no user), `max.tres.total`."""
    rows = []
    for assoc in _records(data, ("associations",), source):
        if assoc.get("user") or assoc.get("partition"):
            continue
        if cluster is not None and assoc.get("cluster") not in (None, "", cluster):
            continue
        limit = gpu_in_tres_list(((assoc.get("max") or {}).get("tres") or {}).get("total"))
        rows.append(
            (
                assoc.get("cluster") or cluster,
                ts,
                "account",
                str(assoc["account"]),
                limit,
                _number(assoc.get("priority")),
            )
        )
    return _frame(rows)


def partition_snapshots(data: Any, *, cluster: str, ts: datetime, source: str) -> pl.DataFrame:
    """QUOTA_SNAPSHOTS (kind partition) from `GET /slurm/vX/partitions`: the GPUs its nodes hold (TRES)."""
    rows = []
    for part in _records(data, ("partitions",), source):
        tres = part.get("tres")
        text = tres.get("configured") if isinstance(tres, Mapping) else tres
        priority = part.get("priority")
        tier = priority.get("tier") if isinstance(priority, Mapping) else part.get("priority_tier", priority)
        rows.append((cluster, ts, "partition", str(part["name"]), gpu_in_tres(text), _number(tier)))
    return _frame(rows)


def sacctmgr_qos_snapshots(text: str, *, cluster: str, ts: datetime, source: str) -> pl.DataFrame:
    """QUOTA_SNAPSHOTS (kind qos) from `sacctmgr -P show qos format=Name,GrpTRES,Priority`."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines or not lines[0].startswith("Name|"):
        raise InputError(source, "expected a 'Name|GrpTRES|Priority' header", line=1)
    rows = []
    for lineno, line in enumerate(lines[1:], start=2):
        fields = line.rstrip("|").split("|")
        if len(fields) < 3:
            raise InputError(source, f"expected 3 fields, found {len(fields)}", line=lineno)
        priority = int(fields[2]) if fields[2].strip() else None
        rows.append((cluster, ts, "qos", fields[0], gpu_in_tres(fields[1]), priority))
    return _frame(rows)


def _frame(rows: list[tuple[Any, ...]]) -> pl.DataFrame:
    if not rows:
        return tables.empty(tables.QUOTA_SNAPSHOTS)
    return pl.DataFrame(rows, schema=tables.QUOTA_SNAPSHOTS, orient="row")


def _live_state(job: Mapping[str, Any]) -> str:
    state = job.get("job_state")
    if isinstance(state, list):
        return str(state[0]) if state else ""
    return str(state or "")


def quota_usage(data: Any, *, cluster: str, ts: datetime, source: str) -> pl.DataFrame:
    """QUOTA_USAGE from live jobs (`GET /slurm/vX/jobs` or `squeue --json`): GPUs of RUNNING jobs."""
    totals: dict[tuple[str, str], list[int]] = {}
    for job in _records(data, ("jobs",), source):
        state = _live_state(job)
        if state not in ("RUNNING", "PENDING"):
            continue
        gpus = gpu_in_tres(job.get("tres_alloc_str")) or 0
        for kind, key in (("qos", "qos"), ("account", "account"), ("partition", "partition")):
            name = job.get(key)
            if not name:
                continue
            entry = totals.setdefault((kind, str(name)), [0, 0, 0])
            if state == "RUNNING":
                entry[0] += gpus
                entry[1] += 1
            else:
                entry[2] += 1
    rows = [(cluster, ts, kind, name, *counts) for (kind, name), counts in sorted(totals.items())]
    if not rows:
        return tables.empty(QUOTA_USAGE)
    return pl.DataFrame(rows, schema=QUOTA_USAGE, orient="row")


def job_gpus(data: Any, *, cluster: str, source: str) -> pl.DataFrame:
    """JOB_GPUS from live jobs: `nodes` expanded, `gres_detail[i]` (`gpu:h100:2(IDX:0-1)`) per node."""
    rows = []
    for job in _records(data, ("jobs",), source):
        details = job.get("gres_detail") or []
        hosts = expand(str(job.get("nodes") or ""), source=source)
        for host, detail in zip(hosts, details, strict=False):
            m = _GRES_IDX.search(str(detail))
            for index in index_ranges(m.group(1)) if m else []:
                rows.append((cluster, int(job["job_id"]), host, index))
    if not rows:
        return tables.empty(JOB_GPUS)
    return pl.DataFrame(rows, schema=JOB_GPUS, orient="row")


def exit_codes(lines: Iterable[str], *, source: str) -> dict[tuple[int, datetime], int]:
    """(job id, submit time) -> exit code from `sacct -P -n -o JobIDRaw,Submit,ExitCode` printed with TZ=UTC.

    Slurm prints `code:signal`; a job killed by a signal gets 128 + signal, as a shell reports it.
    """
    codes: dict[tuple[int, datetime], int] = {}
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        fields = line.rstrip("|").split("|")
        if len(fields) != 3 or not fields[0].isdigit():
            if len(fields) == 3 and "." in fields[0]:
                continue  # a step line (12.batch); jobs only
            raise InputError(source, f"expected 'JobIDRaw|Submit|ExitCode', got {line!r}", line=lineno)
        code, _, signal = fields[2].partition(":")
        try:
            submit = datetime.fromisoformat(fields[1]).replace(tzinfo=None)
            value = int(code)
            sig = int(signal or 0)
        except ValueError:
            raise InputError(source, f"cannot read {line!r}", line=lineno) from None
        codes[(int(fields[0]), submit)] = 128 + sig if value == 0 and sig else value
    return codes


def now_utc() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)


def scontrol_partition_snapshots(text: str, *, cluster: str, ts: datetime, source: str) -> pl.DataFrame:
    """QUOTA_SNAPSHOTS (kind partition) from `scontrol -o show partition`: `TRES=...gres/gpu=N`, `PriorityTier`."""
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = dict(token.partition("=")[::2] for token in line.split())
        if "PartitionName" not in fields:
            raise InputError(source, f"no PartitionName in {line[:80]!r}", line=lineno)
        tier = fields.get("PriorityTier", "")
        rows.append(
            (
                cluster,
                ts,
                "partition",
                fields["PartitionName"],
                gpu_in_tres(fields.get("TRES")),
                int(tier) if tier.isdigit() else None,
            )
        )
    return _frame(rows)
