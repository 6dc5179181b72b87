"""Slurm's other views of the same month: `squeue --json -t PENDING` snapshots and `sacct -P` dumps.

Written by default (`simulate(..., slurm_extras=False)` leaves them out), so the demo month goes
through the product's `sacct -P` and `squeue --json` file readers as well as its `sacct --json` one.

- `slurm/<cluster>/squeue-<day>.json.gz`: a `squeue --json -t PENDING` answer every 10 minutes, one
  after the other as squeue prints them (2-space indents, json-c's escaped slashes), as a cron job
  appending `squeue --json -t PENDING >> squeue-$(date -u +%F).json` keeps them. The
  job records carry a subset of Slurm 23.11's (data_parser v0.0.40) 130 job fields, in the order
  of the real slurmrestd 23.11 job record (fixture slurmrestd-23.11-v0.0.40/slurm-job-pending.json):
  the ones that say who waits, for what and why (`state_reason`: Priority, Resources,
  AssocGrpGRES, QOSGrpGRES).
- `slurm/<cluster>/sacct-<month>.txt.gz`: `sacct -P --duplicates --allusers --format=JobID,
  JobIDRaw,Cluster,Account,Partition,QOS,State,ExitCode,DerivedExitCode,Reason,Submit,Eligible,
  Start,End,AllocTRES,NodeList` with TZ=UTC: array tasks as `<array id>_<task>`, ExitCode as
  `<return code>:<signal>`, `CANCELLED by <uid>` for cancelled jobs, `Unknown` for a time not
  reached, the records of the JSON dump of the same month.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any

from simulator.fleet import GPUS_PER_NODE, Cluster, hostlist
from simulator.jobs import Run
from simulator.json_text import indented
from simulator.scheduler import PendingSnapshot
from simulator.write_slurm import (
    CPUS_PER_GPU,
    MEM_MB_PER_GPU,
    META,
    association_id,
    json_c,
    record_exit,
    records_in,
)

SACCT_FIELDS = (
    "JobID",
    "JobIDRaw",
    "Cluster",
    "Account",
    "Partition",
    "QOS",
    "State",
    "ExitCode",
    "DerivedExitCode",
    "Reason",
    "Submit",
    "Eligible",
    "Start",
    "End",
    "AllocTRES",
    "NodeList",
)


def _num(value: int | None) -> dict[str, Any]:
    return {"set": value is not None, "infinite": False, "number": value or 0}


def _uid(user: str) -> int:
    return 10_000 + sum(ord(c) for c in user) % 5000


def _tres(gpus: int, nodes: int, mig: Sequence[str] = (), *, shard: bool = False) -> str:
    """AllocTRES as `sacct -P` prints it; MIG instances add their typed gres (`gres/gpu:1g.10gb=1`);
    a shard request holds `gres/shard=N` and no gres/gpu."""
    cpus = gpus * CPUS_PER_GPU
    head = f"cpu={cpus},mem={gpus * MEM_MB_PER_GPU // 1024}G,node={nodes},billing={cpus}"
    if shard:
        return f"{head},gres/shard={gpus}"
    typed = "".join(f",gres/gpu:{p}={mig.count(p)}" for p in sorted(set(mig)))
    return f"{head},gres/gpu={gpus}{typed}"


def squeue_job(run: Run, reason: str, priority: int, cluster: Cluster) -> dict[str, Any]:
    spec = run.spec
    task = spec.array[1] if spec.array is not None else None
    return {
        "account": spec.account,
        "accrue_time": _num(run.submit_s),
        "array_job_id": _num(run.array_job_id),
        "array_task_id": _num(task),
        "association_id": association_id(spec.account, spec.user),
        "cluster": cluster.name,
        "comment": spec.comment or "",
        "eligible_time": _num(run.submit_s),
        "gres_detail": [],
        "group_name": spec.user,
        "job_id": run.job_id,
        "job_state": ["PENDING"],
        "name": spec.name,
        "nodes": "",
        "node_count": _num(max(1, spec.gpus // GPUS_PER_NODE)),
        "partition": spec.partition,
        "priority": _num(priority),
        "qos": spec.qos,
        "requeue": spec.requeue,
        "restart_cnt": run.attempt,
        "state_reason": reason,
        "submit_time": _num(run.submit_s),
        "time_limit": _num(spec.limit_min),
        "tres_req_str": _tres(spec.gpus, max(1, spec.gpus // GPUS_PER_NODE), shard=spec.shard),
        "tres_alloc_str": "",
        "user_name": spec.user,
    }


def squeue_answers(snapshots: Iterable[PendingSnapshot], cluster: Cluster) -> Iterator[str]:
    """One `squeue --json -t PENDING` answer per snapshot, as squeue prints it, one after the other."""
    for snap in snapshots:
        slurm: dict[str, Any] = dict(META["slurm"])
        meta: dict[str, Any] = {**META, "command": ["squeue", "--json", "-t", "PENDING"]}
        meta["slurm"] = {**slurm, "cluster": cluster.name}
        doc = {
            "jobs": [squeue_job(run, reason, prio, cluster) for run, reason, prio in snap.jobs],
            "last_backfill": _num(snap.at_s - 30),
            "last_update": _num(snap.at_s),
            "meta": meta,
            "errors": [],
            "warnings": [],
        }
        yield json_c(indented(doc)) + "\n"


def _when(t: int | None) -> str:
    if not t:
        return "Unknown"
    return datetime.fromtimestamp(t, UTC).strftime("%Y-%m-%dT%H:%M:%S")


def sacct_line(run: Run, cluster: Cluster) -> str:
    spec = run.spec
    started = run.start_s is not None
    state = run.state if run.end_s is not None or not started else "RUNNING"
    if not started and run.end_s is None:
        state = "PENDING"
    if state == "CANCELLED":
        state = f"CANCELLED by {_uid(spec.user)}"
    job_code, _ = record_exit(run)
    derived = job_code if run.state != "TIMEOUT" else (0, 0)
    nodes = [cluster.hosts[h] for h in run.hosts]
    job_id = f"{run.array_job_id}_{spec.array[1]}" if spec.array is not None else str(run.job_id)
    fields = (
        job_id,
        str(run.job_id),
        cluster.name,
        spec.account,
        spec.partition,
        spec.qos,
        state,
        f"{job_code[0]}:{job_code[1]}",
        f"{derived[0]}:{derived[1]}",
        run.reason,
        _when(run.submit_s),
        _when(run.submit_s),
        _when(run.start_s),
        _when(run.end_s),
        _tres(spec.gpus, len(nodes), [m.profile for s in run.slots if (m := cluster.mig_slot(s))], shard=spec.shard)
        if started
        else "",
        hostlist(nodes) if nodes else "None assigned",
    )
    return "|".join(fields) + "\n"


def sacct_text(runs: Iterable[Run], cluster: Cluster, lo: int, hi: int, as_of_s: int) -> Iterator[str]:
    """`sacct -P` lines of the records whose [submit, end) overlaps [lo, hi), by job id then submit."""
    chosen = records_in(runs, lo, hi, as_of_s)
    yield "|".join(SACCT_FIELDS) + "\n"
    for r in chosen:
        yield sacct_line(r, cluster)
