"""Readers for slurmrestd and CLI shapes other than jobs (jobs are `collectors.sacct.read_sacct`).

Both families are read: v0.0.38 (Slurm 22.05, flat ints, QOS under the key `QOS`) and the
data_parser v0.0.39+ shapes (ints as `{set, infinite, number}`, QOS under `qos`).

Every reader takes untrusted input: an answer it cannot read raises `InputError` naming the source,
the record (or line) and the field. A quota snapshot is all or nothing: a record that cannot be read
fails the whole answer rather than leaving that quota out (a missing limit would read as none).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import Any

import polars as pl

from collectors.sacct import _number, exit_text  # the one reader of Slurm's number forms and exit codes
from collectors.sacctmgr import gpu_limits
from collectors.slurm.gpu_request import gpu_in_tres, gpu_request
from collectors.slurm.hostlist import expand, index_ranges
from gpusteward import tables
from gpusteward.errors import InputError

# Current use of GPUs against each quota holder (not a warehouse table: QUOTA_SNAPSHOTS has no usage column).
QUOTA_USAGE = tables.QUOTA_USAGE
# Which GPU (host, index) a running job holds, from slurmctld's gres_detail; joins DCGM's (host, gpu).
JOB_GPUS = tables.schema({"cluster": pl.Utf8, "job_id": pl.Int64, "host": pl.Utf8, "gpu": pl.Int16})

_SHARD_IN_TRES = re.compile(r"(?:^|,)gres/shard=(\d+)(?:,|$)", re.ASCII)
_TYPED_SHARDS = re.compile(r"(?:^|,)gres/shard:[^=,]+=(\d{1,10})(?=,|$)", re.ASCII)
_GRES_IDX = re.compile(r"gpu(?::[^:(]+)?:\d+\(IDX:([^)]*)\)", re.ASCII)
_IDX = re.compile(r"\d{1,5}(?:-\d{1,5})?(?:,\d{1,5}(?:-\d{1,5})?)*", re.ASCII)
_DIGITS = re.compile(r"\d{1,19}", re.ASCII)
_INT32_MAX = 2**31 - 1
_INT64_MAX = 2**63 - 1
_GPU_INDEX_MAX = 2**15 - 1  # JOB_GPUS.gpu is an Int16


def gpu_or_shard_in_tres(text: str | None) -> int | None:
    """A job's GPU slots in a TRES string: `gres/gpu=N`, else its shards of time-sliced GPUs
    (`gres/shard=N`, or the sum of typed `gres/shard:<type>=N`), each one slot; none: None.

    Slurm's shard gres hands out a GPU several times over (gres.conf `Name=shard Count=`), and a
    job that asked for shards (`--gres=shard:1`) holds gres/shard and no gres/gpu; the config's
    `[[capacity.shared]]` rule of the node (replicas = shards per GPU) makes a slot 1/replicas of a GPU.
    """
    gpus = gpu_in_tres(text)
    if gpus is not None:
        return gpus
    m = _SHARD_IN_TRES.search(text or "")
    if m:
        return int(m.group(1))
    typed = _TYPED_SHARDS.findall(text or "")
    return sum(int(n) for n in typed) if typed else None


def gpu_in_tres_list(items: Any) -> int | None:
    """The `gres/gpu` count in a TRES list `[{"type": "gres", "name": "gpu", "count": N}]`; none: null.

    Raises TypeError or ValueError when `items` is not such a list or the count is not a number.
    """
    if items is None:
        return None
    if not isinstance(items, list):
        raise TypeError(f"a TRES list is a {type(items).__name__}, expected a list")
    for item in items:
        if isinstance(item, Mapping) and item.get("type") == "gres" and item.get("name") == "gpu":
            count = _number(item.get("count"))
            return None if count is None or count < 0 else count
    return None


# -- typed access to untrusted records: TypeError or ValueError, turned into InputError per record ---


@contextmanager
def _record(source: str, what: str, index: int) -> Iterator[None]:
    try:
        yield
    except (TypeError, ValueError) as exc:
        raise InputError(source, f"{what} record {index}: {exc}"[:300]) from None


def _at(record: Mapping[str, Any], *path: str) -> Any:
    """`record[path[0]][path[1]]...`, None where a key is absent or null; a non-object on the way is a TypeError."""
    value: Any = record
    for depth, key in enumerate(path):
        if value is None:
            return None
        if not isinstance(value, Mapping):
            where = ".".join(path[:depth])
            raise TypeError(f"{where!r} is a {type(value).__name__}, expected an object")
        value = value.get(key)
    return value


def _name(record: Mapping[str, Any], key: str) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value:
        shown = "missing" if value is None else f"{value!r}"[:60]
        raise ValueError(f"{key!r} is {shown}, expected a non-empty string")
    return value


def _text(value: Any, what: str) -> str | None:
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{what!r} is a {type(value).__name__}, expected a string")


def _bounded(value: int | None, what: str, high: int = _INT32_MAX) -> int | None:
    if value is not None and not -high - 1 <= value <= high:
        raise ValueError(f"{what} {value} is out of range")
    return value


def _digits(text: str) -> int | None:
    """A non-negative decimal in ASCII digits that fits an Int64, else None."""
    if not _DIGITS.fullmatch(text):
        return None
    value = int(text)
    return value if value <= _INT64_MAX else None


def _records(data: Any, keys: Sequence[str], source: str) -> list[Mapping[str, Any]]:
    if isinstance(data, Mapping):
        for key in keys:
            records = data.get(key)
            if isinstance(records, list):
                for i, record in enumerate(records):
                    if not isinstance(record, Mapping):
                        raise InputError(source, f"{key} record {i} is a {type(record).__name__}, expected an object")
                return records
    raise InputError(source, f"no {' or '.join(repr(k) for k in keys)} list in the answer")


def cluster_of(data: Any, default: str) -> str:
    meta = data.get("meta") if isinstance(data, Mapping) else None
    if not isinstance(meta, Mapping):
        return default
    slurm = meta.get("slurm") or meta.get("Slurm")
    cluster = slurm.get("cluster") if isinstance(slurm, Mapping) else None
    return cluster if isinstance(cluster, str) and cluster else default


# -- quota snapshots -------------------------------------------------------------------------------


def qos_snapshots(data: Any, *, cluster: str, ts: datetime, source: str) -> pl.DataFrame:
    """QUOTA_SNAPSHOTS (kind qos) from `GET /slurmdb/vX/qos`: GrpTRES gres/gpu is `limits.max.tres.total`."""
    rows = []
    for i, qos in enumerate(_records(data, ("QOS", "qos"), source)):
        with _record(source, "qos", i):
            limit = _bounded(gpu_in_tres_list(_at(qos, "limits", "max", "tres", "total")), "gres/gpu limit")
            rows.append((cluster, ts, "qos", _name(qos, "name"), limit, _number(qos.get("priority"))))
    return _frame(rows)


def association_snapshots(data: Any, *, cluster: str | None, ts: datetime, source: str) -> pl.DataFrame:
    """QUOTA_SNAPSHOTS (kind account) from `GET /slurmdb/vX/associations`: account rows (no user), `max.tres.total`."""
    rows = []
    for i, assoc, own in _account_associations(data, cluster, source):
        with _record(source, "association", i):
            limit = _bounded(gpu_in_tres_list(_at(assoc, "max", "tres", "total")), "gres/gpu limit")
            priority = _number(assoc.get("priority"))
            rows.append((own, ts, "account", _name(assoc, "account"), limit, priority))
    return _frame(rows)


def _account_associations(
    data: Any, cluster: str | None, source: str
) -> list[tuple[int, Mapping[str, Any], str | None]]:
    """(index, record, cluster) of the account associations (no user, no partition) of `cluster`."""
    out = []
    for i, assoc in enumerate(_records(data, ("associations",), source)):
        with _record(source, "association", i):
            if assoc.get("user") or assoc.get("partition"):
                continue
            own = _text(assoc.get("cluster"), "cluster")
            if cluster is not None and own not in (None, "", cluster):
                continue
        out.append((i, assoc, own or cluster))
    return out


def association_tree(data: Any, *, cluster: str | None, ts: datetime, source: str) -> pl.DataFrame:
    """ACCOUNT_TREE from `GET /slurmdb/vX/associations`: account rows with `parent_account` and own GPU limits."""
    rows = []
    for i, assoc, own in _account_associations(data, cluster, source):
        with _record(source, "association", i):
            total = _at(assoc, "max", "tres", "total")
            limit = _bounded(gpu_in_tres_list(total), "gres/gpu limit")
            parent = _text(assoc.get("parent_account"), "parent_account") or None
            rows.append((own, ts, _name(assoc, "account"), parent, limit, _typed_gpus(total)))
    if not rows:
        return tables.empty(tables.ACCOUNT_TREE)
    return pl.DataFrame(rows, schema=tables.ACCOUNT_TREE, orient="row")


def _typed_gpus(items: Any) -> str | None:
    """Typed GPU limits (`{"type": "gres", "name": "gpu:h100", "count": 3}`) as sacctmgr prints them: `h100=3`."""
    typed = []
    for item in items or []:
        name = item.get("name") if isinstance(item, Mapping) else None
        if item.get("type") == "gres" and isinstance(name, str) and name.startswith("gpu:"):
            count = _bounded(_number(item.get("count")), f"gres/{name} limit")
            if count is not None and count >= 0:
                typed.append(f"{name[4:]}={count}")
    return ",".join(sorted(typed)) or None


def partition_snapshots(data: Any, *, cluster: str, ts: datetime, source: str) -> pl.DataFrame:
    """QUOTA_SNAPSHOTS (kind partition) from `GET /slurm/vX/partitions`: the GPUs its nodes hold (TRES)."""
    rows = []
    for i, part in enumerate(_records(data, ("partitions",), source)):
        with _record(source, "partition", i):
            tres = part.get("tres")
            text = _text(tres.get("configured") if isinstance(tres, Mapping) else tres, "tres")
            priority = part.get("priority")
            tier = priority.get("tier") if isinstance(priority, Mapping) else part.get("priority_tier", priority)
            limit = _bounded(gpu_in_tres(text), "gres/gpu count")
            rows.append((cluster, ts, "partition", _name(part, "name"), limit, _number(tier)))
    return _frame(rows)


def sacctmgr_qos_snapshots(text: str, *, cluster: str, ts: datetime, source: str) -> pl.DataFrame:
    """QUOTA_SNAPSHOTS (kind qos) from `sacctmgr -P show qos format=Name,GrpTRES,Priority`."""
    lines = [(n, line) for n, line in enumerate(text.splitlines(), start=1) if line.strip()]
    if not lines or not lines[0][1].startswith("Name|"):
        raise InputError(source, "expected a 'Name|GrpTRES|Priority' header", line=lines[0][0] if lines else 1)
    rows = []
    for lineno, line in lines[1:]:
        fields = line.rstrip("|").split("|")
        if len(fields) < 3:
            raise InputError(source, f"expected 3 fields, found {len(fields)}", line=lineno)
        priority = _digits(fields[2].strip()) if fields[2].strip() else None
        if fields[2].strip() and priority is None:
            raise InputError(source, f"priority {fields[2][:40]!r} is not a whole number", line=lineno)
        try:
            limit = gpu_limits(fields[1], where=f"qos {fields[0]!r}").total
        except ValueError as exc:
            raise InputError(source, str(exc), line=lineno) from None
        rows.append((cluster, ts, "qos", fields[0], limit, priority))
    return _frame(rows)


def scontrol_partition_snapshots(text: str, *, cluster: str, ts: datetime, source: str) -> pl.DataFrame:
    """QUOTA_SNAPSHOTS (kind partition) from `scontrol -o show partition`: `TRES=...gres/gpu=N`, `PriorityTier`."""
    rows = []
    for lineno, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        fields = dict(token.partition("=")[::2] for token in line.split())
        if "PartitionName" not in fields:
            raise InputError(source, f"no PartitionName in {line[:80]!r}", line=lineno)
        limit = gpu_in_tres(fields.get("TRES"))
        if limit is not None and limit > _INT32_MAX:
            raise InputError(source, f"gres/gpu count {limit} is out of range", line=lineno)
        rows.append((cluster, ts, "partition", fields["PartitionName"], limit, _digits(fields.get("PriorityTier", ""))))
    return _frame(rows)


def _frame(rows: list[tuple[Any, ...]]) -> pl.DataFrame:
    if not rows:
        return tables.empty(tables.QUOTA_SNAPSHOTS)
    return pl.DataFrame(rows, schema=tables.QUOTA_SNAPSHOTS, orient="row")


# -- live jobs -------------------------------------------------------------------------------------


def _live_state(job: Mapping[str, Any]) -> str:
    state = job.get("job_state")
    if isinstance(state, list):
        return str(state[0]) if state else ""
    return str(state or "")


def _job_id(job: Mapping[str, Any]) -> int:
    value = job.get("job_id")
    number = _digits(value) if isinstance(value, str) else _number(value)
    if number is None or number < 0:
        raise ValueError(f"'job_id' is {value!r}"[:80] + ", expected a job number")
    return number


def ancestors(tree: pl.DataFrame | None) -> dict[str, list[str]]:
    """account -> its parents up to the root, from ACCOUNT_TREE rows (the latest per account); a cycle stops."""
    if tree is None or tree.is_empty():
        return {}
    latest = tree.sort("ts").unique(subset=["cluster", "account"], keep="last")
    parent = {a: p for a, p in latest.select("account", "parent").rows() if p and p != a}
    out: dict[str, list[str]] = {}
    for account in parent:
        chain, seen, at = [], {account}, parent.get(account)
        while at is not None and at not in seen:
            chain.append(at)
            seen.add(at)
            at = parent.get(at)
        out[account] = chain
    return out


def quota_usage(
    data: Any, *, cluster: str, ts: datetime, source: str, tree: pl.DataFrame | None = None
) -> pl.DataFrame:
    """QUOTA_USAGE from live jobs (`GET /slurm/vX/jobs` or `squeue --json`): GPUs of RUNNING jobs.

    With the account tree (ACCOUNT_TREE), an account's row counts its whole subtree, as Slurm counts
    a parent's GrpTRES against its children's jobs: research holds what vision and nlp run.
    """
    up = ancestors(tree)
    totals: dict[tuple[str, str], list[int]] = {}
    for i, job in enumerate(_records(data, ("jobs",), source)):
        with _record(source, "job", i):
            state = _live_state(job)
            if state not in ("RUNNING", "PENDING"):
                continue
            gpus = gpu_in_tres(_text(job.get("tres_alloc_str"), "tres_alloc_str")) or 0
            holders: list[tuple[str, str]] = []
            for kind, key in (("qos", "qos"), ("account", "account"), ("partition", "partition")):
                name = _text(job.get(key), key)
                if name:
                    holders.append((kind, name))
                    if kind == "account":
                        holders.extend(("account", parent) for parent in up.get(name, []))
            for holder in holders:
                entry = totals.setdefault(holder, [0, 0, 0])
                if state == "RUNNING":
                    entry[0] += gpus
                    entry[1] += 1
                else:
                    entry[2] += 1
    for (kind, name), counts in totals.items():
        if counts[0] > _INT32_MAX:
            raise InputError(source, f"{kind} {name!r}: {counts[0]} GPUs in use is out of range")
    rows = [(cluster, ts, kind, name, *counts) for (kind, name), counts in sorted(totals.items())]
    if not rows:
        return tables.empty(QUOTA_USAGE)
    return pl.DataFrame(rows, schema=QUOTA_USAGE, orient="row")


def _epoch(value: Any, what: str) -> datetime | None:
    seconds = _number(value)
    if not seconds:
        return None
    if not 946_684_800 <= seconds < 4_102_444_800:  # 2000..2100, as the job records
        raise ValueError(f"{what} {seconds} is out of range")
    return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)


def pending_jobs(data: Any, *, cluster: str, ts: datetime, source: str) -> pl.DataFrame:
    """PENDING_JOBS from live jobs (`pending_rows`)."""
    rows = pending_rows(data, cluster=cluster, ts=ts, source=source)
    return pl.DataFrame(rows, schema=tables.PENDING_JOBS, orient="row") if rows else tables.empty(tables.PENDING_JOBS)


def pending_rows(data: Any, *, cluster: str, ts: datetime, source: str) -> list[tuple[Any, ...]]:
    """PENDING_JOBS' rows from live jobs (`squeue --json` or `GET /slurm/vX/jobs`): each waiting job and its reason.

    The reason is Slurm's `state_reason` as squeue prints it: AssocGrpGRES or QOSGrpGRES (a quota),
    AssocMaxJobsLimit and the like (other limits), Priority or Resources (capacity), Dependency,
    BeginTime, JobHeldUser... GPUs asked and their type: `collectors.slurm.gpu_request`; a job that asked
    for no GPU but for shards of time-sliced GPUs: its `gres/shard` count in `tres_req_str`.
    """
    rows: list[tuple[Any, ...]] = []
    for i, job in enumerate(_records(data, ("jobs",), source)):
        with _record(source, "job", i):
            if _live_state(job) != "PENDING":
                continue
            array_job = _number(job.get("array_job_id")) or None
            asked, gpu_type = gpu_request(job, _number)
            if asked is None:
                asked = gpu_or_shard_in_tres(_text(job.get("tres_req_str"), "tres_req_str"))
            gpus = _bounded(asked, "gres/gpu asked")
            reason = _text(job.get("state_reason"), "state_reason")
            rows.append((
                cluster, ts, _job_id(job), array_job,
                _number(job.get("array_task_id")) if array_job else None,
                _text(job.get("user_name"), "user_name"), _text(job.get("account"), "account"),
                _text(job.get("partition"), "partition"), _text(job.get("qos"), "qos"), gpus,
                None if reason in (None, "", "None") else reason,
                _epoch(job.get("submit_time"), "submit_time"), _epoch(job.get("eligible_time"), "eligible_time"),
                gpu_type,
            ))
    return rows


def _gpu_indices(detail: Any) -> list[int]:
    """GPU indices in one `gres_detail` entry (`gpu:h100:2(IDX:0-1)`); none when it names no GPU."""
    text = _text(detail, "gres_detail") or ""
    m = _GRES_IDX.search(text)
    if m is None:
        return []
    if not _IDX.fullmatch(m.group(1)):
        raise ValueError(f"cannot read the GPU indices in {text[:80]!r}")
    indices = index_ranges(m.group(1))
    if any(i > _GPU_INDEX_MAX for i in indices):
        raise ValueError(f"a GPU index in {text[:80]!r} is out of range")
    return indices


def job_gpus(data: Any, *, cluster: str, source: str) -> pl.DataFrame:
    """JOB_GPUS from live jobs: `nodes` expanded, `gres_detail[i]` (`gpu:h100:2(IDX:0-1)`) per node."""
    rows: list[tuple[str, int, str, int]] = []
    for i, job in enumerate(_records(data, ("jobs",), source)):
        with _record(source, "job", i):
            details = job.get("gres_detail") or []
            if not isinstance(details, list):
                raise TypeError(f"'gres_detail' is a {type(details).__name__}, expected a list")
            if not details:
                continue
            job_id = _job_id(job)
            hosts = expand(_text(job.get("nodes"), "nodes") or "", source=source)
            for host, detail in zip(hosts, details, strict=False):
                rows.extend((cluster, job_id, host, index) for index in _gpu_indices(detail))
    if not rows:
        return tables.empty(JOB_GPUS)
    return pl.DataFrame(rows, schema=JOB_GPUS, orient="row")


# -- sacct text ------------------------------------------------------------------------------------


def exit_codes(lines: Iterable[str], *, source: str) -> dict[tuple[int, datetime], tuple[int | None, int | None]]:
    """(job id, submit time) -> (return code, signal) from `sacct -P -n -o JobIDRaw,Submit,ExitCode`
    printed with TZ=UTC, as the file readers store them (`collectors.sacct.exit_text`: `0:9` is
    signal 9 with no return code)."""
    codes: dict[tuple[int, datetime], tuple[int | None, int | None]] = {}
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        fields = line.rstrip("|").split("|")
        job_id = _digits(fields[0]) if len(fields) == 3 else None
        if job_id is None:
            if len(fields) == 3 and "." in fields[0]:
                continue  # a step line (12.batch); jobs only
            raise InputError(source, f"expected 'JobIDRaw|Submit|ExitCode', got {line[:120]!r}", line=lineno)
        try:
            submit = datetime.fromisoformat(fields[1]).replace(tzinfo=None)
            codes[(job_id, submit)] = exit_text(fields[2] if ":" in fields[2] else f"{fields[2]}:0")
        except ValueError:
            raise InputError(source, f"cannot read {line[:120]!r}", line=lineno) from None
    return codes


def now_utc() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None, microsecond=0)
