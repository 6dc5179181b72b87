"""`sacct --json --duplicates` in the Slurm 23.11 (data_parser v0.0.40) shape, and `sacctmgr -P` snapshots.

The record layout, key order and quirks follow real 23.11 output (fixtures under
shared/fixtures/scheduler: sacct-json/sacct_slurm_23_11_5.json and the slurmrestd-23.11 slurmdb
job records): numbers as `{set, infinite, number}`, `state.current` a list, exit codes with a
return code or a signal (simulator.failures), array tasks with the array's job id and their task
id, running jobs with end 0, pending ones start 0 and nodes "None assigned", and slashes escaped
as json-c does. 22.05's JSON reported exit code 0 for every job, which is why this is 23.11.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, date, datetime
from typing import Any

from simulator.failures import CLEAN, SIGTERM, job_exit
from simulator.fleet import ACCOUNT_FAIRSHARE, ACCOUNT_PARENT, GPUS_PER_NODE, TEAM_SHARES, USERS, Cluster, hostlist
from simulator.jobs import Run
from simulator.json_text import indented
from simulator.plan import epoch

META: dict[str, Any] = {
    "plugin": {
        "type": "",
        "name": "",
        "data_parser": "data_parser/v0.0.40",
        "accounting_storage": "accounting_storage/slurmdbd",
    },
    "client": {"source": "/dev/pts/0", "user": "root", "group": "root"},
    "command": ["sacct", "--duplicates", "--allusers", "--json"],
    "slurm": {"version": {"major": "23", "micro": "10", "minor": "11"}, "release": "23.11.10", "cluster": ""},
}
CPUS_PER_GPU = 12
MEM_MB_PER_GPU = 120 * 1024
_STEP_STATE = {"TIMEOUT": "CANCELLED", "PREEMPTED": "CANCELLED", "NODE_FAIL": "FAILED"}
_SIGNAL_NAMES = {6: "ABRT", 9: "KILL", 15: "TERM"}


def _num(value: int | None) -> dict[str, Any]:
    """data_parser's number form: `{set, infinite, number}`."""
    return {"set": value is not None, "infinite": False, "number": value or 0}


def exit_code(code: tuple[int, int]) -> dict[str, Any]:
    """`exit_code` as 23.11 writes it: a return code, or a signal and no return code."""
    rc, sig = code
    status = "SIGNALED" if sig else ("ERROR" if rc else "SUCCESS")
    return {
        "status": [status],
        "return_code": _num(None if sig else rc),
        "signal": {"id": _num(sig or None), "name": _SIGNAL_NAMES.get(sig, "")},
    }


def record_exit(run: Run) -> tuple[tuple[int, int], tuple[int, int]]:
    """(job, batch step) exit codes of a record: a TIMEOUT job keeps 0:0 while its step was sent
    SIGTERM (fixture slurmrestd-23.11 slurmdb-job-timeout.json); a never-started one has 0:0."""
    if run.start_s is None or run.end_s is None:
        return CLEAN, CLEAN
    job = job_exit(run.state, run.spec.exit_code)
    return job, (SIGTERM if run.state == "TIMEOUT" else job)


def _tres(kind: str, name: str, tres_id: int, count: int | None) -> dict[str, Any]:
    return {"type": kind, "name": name, "id": tres_id, "count": count}


# TRES ids the database gives each MIG gres type as it first sees it (after gres/gpu and gres/gpu:h100),
# and gres/shard's (AccountingStorageTRES=gres/gpu,gres/shard) after them.
_MIG_TRES_IDS = {"1g.10gb": 1003, "2g.20gb": 1004, "3g.40gb": 1005, "4g.40gb": 1006}
_SHARD_TRES_ID = 1007


def _gres(gpus: int, typed: bool, mig: Sequence[str] = (), *, shard: bool = False) -> list[dict[str, Any]]:
    """gres/gpu and its typed counts; `mig`: the profiles of the MIG instances among the GPUs, which
    Slurm (AutoDetect=nvml) types by profile. A shard request (`--gres=shard:N`) holds gres/shard
    alone: N shards of a time-sliced GPU and no gres/gpu."""
    if shard:
        return [_tres("gres", "shard", _SHARD_TRES_ID, gpus)]
    out = [_tres("gres", "gpu", 1001, gpus)]
    whole = gpus - len(mig)
    if typed and whole:
        out.append(_tres("gres", "gpu:h100", 1002, whole))
    for profile in sorted(set(mig)):
        out.append(_tres("gres", f"gpu:{profile}", _MIG_TRES_IDS[profile], mig.count(profile)))
    return out


def _mig_profiles(run: Run, cluster: Cluster) -> list[str]:
    return [m.profile for s in run.slots if (m := cluster.mig_slot(s)) is not None]


def _zero_time() -> dict[str, int]:
    return {"seconds": 0, "microseconds": 0}


def _step(  # noqa: PLR0917 - one record's parts, in the order the record holds them
    run: Run, nodes: list[str], end_s: int, state: str, code: tuple[int, int], mig: Sequence[str]
) -> dict[str, Any]:
    assert run.start_s is not None
    interactive = run.spec.partition == "interactive"
    cpu_s = max(0, end_s - run.start_s) * run.spec.gpus
    empty: dict[str, list[Any]] = {"max": [], "min": [], "average": [], "total": []}
    return {
        "time": {
            "elapsed": max(0, end_s - run.start_s) if state != "RUNNING" else 0,
            "end": _num(end_s if state != "RUNNING" else None),
            "start": _num(run.start_s),
            "suspended": 0,
            "system": {"seconds": cpu_s // 50, "microseconds": 0},
            "total": {"seconds": cpu_s // 5, "microseconds": 0},
            "user": {"seconds": cpu_s // 5 - cpu_s // 50, "microseconds": 0},
        },
        "exit_code": exit_code(code),
        "nodes": {"count": len(nodes), "range": hostlist(nodes), "list": nodes},
        "tasks": {"count": len(nodes)},
        "pid": "",
        "CPU": {"requested_frequency": {"min": _num(0), "max": _num(0)}, "governor": "0"},
        "kill_request_user": "",
        "state": [state if state == "RUNNING" else _STEP_STATE.get(state, state)],
        "statistics": {"CPU": {"actual_frequency": 0}, "energy": {"consumed": _num(0)}},
        "step": {
            "id": f"{run.job_id}.{'0' if interactive else 'batch'}",
            "name": "bash" if interactive else "batch",
        },
        "task": {"distribution": "Unknown" if interactive else "Cyclic"},
        "tres": {
            "requested": empty,
            "consumed": empty,
            "allocated": [
                _tres("cpu", "", 1, run.spec.gpus * CPUS_PER_GPU),
                _tres("mem", "", 2, run.spec.gpus * MEM_MB_PER_GPU),
                _tres("node", "", 4, len(nodes)),
                *_gres(run.spec.gpus, True, mig, shard=run.spec.shard),
            ],
        },
    }


def association_id(account: str, user: str) -> int:
    """A stable association id: accounts and users in the order sacctmgr lists them."""
    users = [(a, u) for a in sorted(USERS) for u in USERS[a]]
    return 10 + (users.index((account, user)) if (account, user) in users else len(users))


def sacct_record(run: Run, cluster: Cluster, as_of_s: int) -> dict[str, Any]:
    """One record as `sacct --json` (Slurm 23.11, data_parser v0.0.40) prints it when run at `as_of_s`."""
    spec = run.spec
    started = run.start_s is not None
    state = run.state if run.end_s is not None or not started else "RUNNING"
    if not started and run.end_s is None:
        state = "PENDING"
    nodes = [cluster.hosts[h] for h in run.hosts]
    end = run.end_s if run.end_s is not None else 0
    start = run.start_s or 0
    elapsed = (end or as_of_s) - start if started else 0
    flags = ["CLEAR_SCHEDULING"]
    if started:
        flags.append("STARTED_ON_SUBMIT" if start == run.submit_s else "STARTED_ON_SCHEDULE")
    n_nodes = max(1, spec.gpus // GPUS_PER_NODE)
    requested = [
        _tres("cpu", "", 1, spec.gpus * CPUS_PER_GPU),
        _tres("mem", "", 2, spec.gpus * MEM_MB_PER_GPU),
        _tres("node", "", 4, n_nodes),
        _tres("billing", "", 5, spec.gpus * CPUS_PER_GPU),
        *_gres(spec.gpus, spec.typed_gres, shard=spec.shard),
    ]
    allocated = []
    if started:
        allocated = [
            _tres("cpu", "", 1, spec.gpus * CPUS_PER_GPU),
            _tres("mem", "", 2, spec.gpus * MEM_MB_PER_GPU),
            _tres("energy", "", 3, -2),
            _tres("node", "", 4, len(nodes)),
            _tres("billing", "", 5, spec.gpus * CPUS_PER_GPU),
            *_gres(spec.gpus, True, _mig_profiles(run, cluster), shard=spec.shard),
        ]
    job_code, step_code = record_exit(run)
    task = spec.array[1] if spec.array is not None else None
    return {
        "account": spec.account,
        "comment": {"administrator": "", "job": spec.comment or "", "system": ""},
        "allocation_nodes": len(nodes),
        "array": {
            "job_id": run.array_job_id,
            "limits": {"max": {"running": {"tasks": 0}}},
            "task_id": _num(task),
            "task": "",
        },
        "association": {
            "account": spec.account,
            "cluster": cluster.name,
            "partition": "",
            "user": spec.user,
            "id": association_id(spec.account, spec.user),
        },
        "block": "",
        "cluster": cluster.name,
        "constraints": "",
        "container": "",
        "derived_exit_code": exit_code(job_code if run.state != "TIMEOUT" else CLEAN),
        "time": {
            "elapsed": elapsed,
            "eligible": run.submit_s,
            "end": end,
            "start": start,
            "submission": run.submit_s,
            "suspended": 0,
            "system": _zero_time(),
            "limit": _num(spec.limit_min),
            "total": _zero_time(),
            "user": _zero_time(),
        },
        "exit_code": exit_code(job_code),
        "extra": "",
        "failed_node": nodes[0] if state == "NODE_FAIL" and nodes else "",
        "flags": flags,
        "group": spec.user,
        "het": {"job_id": 0, "job_offset": _num(None)},
        "job_id": run.job_id,
        "name": spec.name,
        "licenses": "",
        "mcs": {"label": ""},
        "nodes": hostlist(nodes) if nodes else "None assigned",
        "partition": spec.partition,
        "hold": False,
        "priority": _num(run.priority),
        "qos": spec.qos,
        "required": {
            "CPUs": spec.gpus * CPUS_PER_GPU,
            "memory_per_cpu": _num(None),
            "memory_per_node": _num(spec.gpus * MEM_MB_PER_GPU // n_nodes),
        },
        "kill_request_user": spec.user if state == "CANCELLED" else "",
        "reservation": {"id": 0, "name": ""},
        "script": "",
        "state": {"current": [state], "reason": run.reason},
        "steps": [_step(run, nodes, end, state, step_code, _mig_profiles(run, cluster))] if started else [],
        "submit_line": "",
        "tres": {"allocated": allocated, "requested": requested},
        "used_gres": "",
        "user": spec.user,
        "wckey": {"wckey": "", "flags": []},
        "working_directory": f"/home/{spec.user}/{spec.name}",
    }


def months_touched(start: date, days: int) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    t = epoch(start)
    for d in range(days):
        dt = datetime.fromtimestamp(t + d * 86400, UTC)
        if (dt.year, dt.month) not in out:
            out.append((dt.year, dt.month))
    return out


def month_bounds(year: int, month: int) -> tuple[int, int]:
    nxt = (year + 1, 1) if month == 12 else (year, month + 1)
    return epoch(date(year, month, 1)), epoch(date(*nxt, 1))


def sacct_json(runs: Iterable[Run], cluster: Cluster, lo: int, hi: int, as_of_s: int) -> str:
    """The records whose [submit, end) overlaps [lo, hi), ordered by job id then submit time."""
    return "".join(sacct_pieces(runs, cluster, lo, hi, as_of_s))


def records_in(runs: Iterable[Run], lo: int, hi: int, as_of_s: int) -> list[Run]:
    """The records whose [submit, end) overlaps [lo, hi), ordered by job id then submit time, as sacct lists them."""
    chosen = []
    for r in runs:
        end = r.end_s if r.end_s is not None else as_of_s
        if r.submit_s < hi and end > lo and end >= r.submit_s:
            chosen.append(r)
    chosen.sort(key=lambda r: (r.job_id, r.submit_s, r.attempt))
    return chosen


def sacct_pieces(runs: Iterable[Run], cluster: Cluster, lo: int, hi: int, as_of_s: int) -> Iterator[str]:
    """`sacct_json`'s text in pieces of a record or so, so a month of a large fleet is never one string.

    The text is exactly `json.dumps(doc, indent=2)`: a record inside the document's `jobs` list sits
    two levels deep, so it is its own dump with every line after the first indented four more spaces.
    """
    chosen = records_in(runs, lo, hi, as_of_s)
    head = json.dumps({"meta": META, "errors": [], "jobs": []}, indent=2)
    empty_tail = "[]\n}"
    assert head.endswith(empty_tail)
    if not chosen:
        yield json_c(head) + "\n"
        return
    yield json_c(head[: -len(empty_tail)]) + "[\n"
    for i, r in enumerate(chosen):
        yield ("" if i == 0 else ",\n") + json_c("    " + indented(sacct_record(r, cluster, as_of_s), depth=2))
    yield "\n  ]\n}\n"


def json_c(text: str) -> str:
    """json-c (which slurm uses) escapes forward slashes."""
    return text.replace("/", "\\/")


def assoc_snapshot(cluster: Cluster) -> str:
    """`sacctmgr -P show assoc format=Cluster,Account,User,ParentName,GrpTRES,Priority` for the cluster.

    Account rows name their parent (root, or the `ai` group above the research teams), user rows
    leave it empty, as sacctmgr prints them.
    """
    lines = [
        "Cluster|Account|User|ParentName|GrpTRES|Priority",
        f"{cluster.name}|root||||",
        f"{cluster.name}|root|root|||",
    ]
    for parent in sorted(set(ACCOUNT_PARENT.values()) - {"root"}):
        lines.append(f"{cluster.name}|{parent}||root||")
    for account in sorted(TEAM_SHARES):
        limit = cluster.account_limit(account)
        lines.append(
            f"{cluster.name}|{account}||{ACCOUNT_PARENT[account]}|gres/gpu={limit}|{ACCOUNT_FAIRSHARE[account]}"
        )
        for user in USERS[account]:
            lines.append(f"{cluster.name}|{account}|{user}|||")
    return "\n".join(lines) + "\n"


def assoc_name(t: int) -> str:
    return f"assoc-{datetime.fromtimestamp(t, UTC).strftime('%Y%m%dT%H%M%SZ')}.txt"
