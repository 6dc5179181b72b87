"""`sacct --json --duplicates` in the Slurm 22.05 (openapi/dbv0.0.38) shape, and `sacctmgr -P` snapshots.

The record layout, key order and quirks follow real 22.05.8/22.05.9 output (fixtures under
shared/fixtures/scheduler): exit_code is always SUCCESS/0 (the 22.05 JSON bug), running jobs have
end 0, pending jobs start 0 and nodes "None assigned", slashes are escaped as json-c does.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from datetime import UTC, date, datetime
from typing import Any

from simulator.fleet import ACCOUNT_FAIRSHARE, GPUS_PER_NODE, TEAM_SHARES, USERS, Cluster, hostlist
from simulator.jobs import Run
from simulator.plan import epoch

META = {
    "plugin": {"type": "openapi/dbv0.0.38", "name": "Slurm OpenAPI DB v0.0.38"},
    "Slurm": {"version": {"major": 22, "micro": 8, "minor": 5}, "release": "22.05.8"},
}
CPUS_PER_GPU = 12
MEM_MB_PER_GPU = 120 * 1024
_OK = {"status": "SUCCESS", "return_code": 0}
_STEP_STATE = {"TIMEOUT": "CANCELLED", "PREEMPTED": "CANCELLED", "NODE_FAIL": "FAILED"}


def _tres(kind: str, name: str | None, tres_id: int, count: int | None) -> dict[str, Any]:
    return {"type": kind, "name": name, "id": tres_id, "count": count}


def _gres(gpus: int, typed: bool) -> list[dict[str, Any]]:
    out = [_tres("gres", "gpu", 1001, gpus)]
    if typed:
        out.append(_tres("gres", "gpu:h100", 1002, gpus))
    return out


def _zero_time() -> dict[str, int]:
    return {"seconds": 0, "microseconds": 0}


def _step(run: Run, nodes: list[str], end_s: int, state: str) -> dict[str, Any]:
    assert run.start_s is not None
    interactive = run.spec.partition == "interactive"
    energy = [_tres("energy", None, 3, 0)]
    cpu_s = max(0, end_s - run.start_s) * run.spec.gpus
    return {
        "nodes": {"list": nodes, "count": len(nodes), "range": hostlist(nodes)},
        "tres": {
            "requested": {"max": [], "min": [], "average": energy, "total": energy},
            "consumed": {"max": [], "min": [], "average": energy, "total": energy},
            "allocated": [
                _tres("cpu", None, 1, run.spec.gpus * CPUS_PER_GPU),
                _tres("mem", None, 2, run.spec.gpus * MEM_MB_PER_GPU),
                _tres("node", None, 4, len(nodes)),
                *_gres(run.spec.gpus, True),
            ],
        },
        "time": {
            "elapsed": max(0, end_s - run.start_s) if state != "RUNNING" else 0,
            "end": end_s if state != "RUNNING" else 0,
            "start": run.start_s,
            "suspended": 0,
            "system": {"seconds": cpu_s // 50, "microseconds": 0},
            "total": {"seconds": cpu_s // 5, "microseconds": 0},
            "user": {"seconds": cpu_s // 5 - cpu_s // 50, "microseconds": 0},
        },
        "exit_code": dict(_OK),
        "tasks": {"count": 1},
        "pid": None,
        "CPU": {"requested_frequency": {"min": 0, "max": 0}, "governor": []},
        "kill_request_user": None,
        "state": state if state == "RUNNING" else _STEP_STATE.get(state, state),
        "statistics": {"CPU": {"actual_frequency": 0}, "energy": {"consumed": 0}},
        "step": {
            "job_id": run.job_id,
            "het": {"component": None},
            "id": "0" if interactive else "batch",
            "name": "bash" if interactive else "batch",
        },
        "task": {"distribution": "Unknown" if interactive else "Cyclic"},
    }


def sacct_record(run: Run, cluster: Cluster, as_of_s: int) -> dict[str, Any]:
    """One record as `sacct --json` prints it when run at `as_of_s` (the end of the range)."""
    spec = run.spec
    started = run.start_s is not None
    state = run.state if run.end_s is not None or not started else "RUNNING"
    if not started:
        state = "PENDING"
    nodes = [cluster.hosts[h] for h in run.hosts]
    end = run.end_s if run.end_s is not None else 0
    start = run.start_s or 0
    elapsed = (end or as_of_s) - start if started else 0
    flags = ["CLEAR_SCHEDULING"]
    if started:
        flags.append("STARTED_ON_SUBMIT" if start == run.submit_s else "STARTED_ON_SCHEDULE")
    requested = [
        _tres("cpu", None, 1, spec.gpus * CPUS_PER_GPU),
        _tres("mem", None, 2, spec.gpus * MEM_MB_PER_GPU),
        _tres("node", None, 4, max(1, spec.gpus // GPUS_PER_NODE)),
        _tres("billing", None, 5, spec.gpus * CPUS_PER_GPU),
        *_gres(spec.gpus, spec.typed_gres),
    ]
    allocated = []
    if started:
        allocated = [
            _tres("cpu", None, 1, spec.gpus * CPUS_PER_GPU),
            _tres("mem", None, 2, spec.gpus * MEM_MB_PER_GPU),
            _tres("energy", None, 3, None),
            _tres("node", None, 4, len(nodes)),
            _tres("billing", None, 5, spec.gpus * CPUS_PER_GPU),
            *_gres(spec.gpus, True),
        ]
    return {
        "account": spec.account,
        "comment": {"administrator": None, "job": spec.comment, "system": None},
        "allocation_nodes": len(nodes),
        "array": {"job_id": 0, "limits": {"max": {"running": {"tasks": 0}}}, "task": None, "task_id": None},
        "association": {"account": spec.account, "cluster": cluster.name, "partition": None, "user": spec.user},
        "cluster": cluster.name,
        "constraints": "",
        "container": None,
        "derived_exit_code": dict(_OK),
        "time": {
            "elapsed": elapsed,
            "eligible": run.submit_s,
            "end": end,
            "start": start,
            "submission": run.submit_s,
            "suspended": 0,
            "system": _zero_time(),
            "limit": spec.limit_min,
            "total": _zero_time(),
            "user": _zero_time(),
        },
        "exit_code": dict(_OK),
        "flags": flags,
        "group": spec.user,
        "het": {"job_id": 0, "job_offset": None},
        "job_id": run.job_id,
        "name": spec.name,
        "mcs": {"label": ""},
        "nodes": hostlist(nodes) if nodes else "None assigned",
        "partition": spec.partition,
        "priority": run.priority,
        "qos": spec.qos,
        "required": {"CPUs": spec.gpus * CPUS_PER_GPU, "memory": spec.gpus * MEM_MB_PER_GPU},
        "kill_request_user": spec.user if state == "CANCELLED" else None,
        "reservation": {"id": 0, "name": 0},
        "state": {"current": state, "reason": run.reason},
        "steps": [_step(run, nodes, end, state)] if started else [],
        "tres": {"allocated": allocated, "requested": requested},
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


def sacct_pieces(runs: Iterable[Run], cluster: Cluster, lo: int, hi: int, as_of_s: int) -> Iterator[str]:
    """`sacct_json`'s text in pieces of a record or so, so a month of a large fleet is never one string.

    The text is exactly `json.dumps(doc, indent=2)`: a record inside the document's `jobs` list sits
    two levels deep, so it is its own dump with every line indented four more spaces.
    """
    chosen = []
    for r in runs:
        end = r.end_s if r.end_s is not None else as_of_s
        if r.submit_s < hi and end > lo and end >= r.submit_s:
            chosen.append(r)
    chosen.sort(key=lambda r: (r.job_id, r.submit_s, r.attempt))
    head = json.dumps({"meta": META, "errors": [], "jobs": []}, indent=2)
    empty_tail = "[]\n}"
    assert head.endswith(empty_tail)
    if not chosen:
        yield _json_c(head) + "\n"
        return
    yield _json_c(head[: -len(empty_tail)]) + "[\n"
    for i, r in enumerate(chosen):
        record = json.dumps(sacct_record(r, cluster, as_of_s), indent=2)
        yield ("" if i == 0 else ",\n") + _json_c("    " + record.replace("\n", "\n    "))
    yield "\n  ]\n}\n"


def _json_c(text: str) -> str:
    """json-c (which slurm uses) escapes forward slashes."""
    return text.replace("/", "\\/")


def assoc_snapshot(cluster: Cluster) -> str:
    """`sacctmgr -P show assoc format=Cluster,Account,User,GrpTRES,Priority` for the cluster."""
    lines = ["Cluster|Account|User|GrpTRES|Priority", f"{cluster.name}|root|||", f"{cluster.name}|root|root||"]
    for account in sorted(TEAM_SHARES):
        lines.append(
            f"{cluster.name}|{account}||gres/gpu={cluster.account_limit(account)}|{ACCOUNT_FAIRSHARE[account]}"
        )
        for user in USERS[account]:
            lines.append(f"{cluster.name}|{account}|{user}||")
    return "\n".join(lines) + "\n"


def assoc_name(t: int) -> str:
    return f"assoc-{datetime.fromtimestamp(t, UTC).strftime('%Y%m%dT%H%M%SZ')}.txt"
