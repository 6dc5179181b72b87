"""Jobs submitted once per session: completed, failed (exit 3), cancelled, preempted-and-requeued, quota-blocked.

TIMEOUT is left out: Slurm checks limits about every 30 s and the smallest limit is 1 minute, so a
TIMEOUT job costs about 90 s (recorded outputs cover the state instead).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from collectors.slurm import QuotaTarget, RestQuotaWriter, SacctmgrQuotaWriter, SlurmCli, SlurmRest
from collectors.slurm.writes import QuotaChange
from tests.realslurm.cluster import SlurmCluster


@dataclass
class Scenario:
    ids: dict[str, int] = field(default_factory=dict)
    blocked_reason: str = ""
    blocked_state: str = ""
    lowered: QuotaChange | None = None
    raised: QuotaChange | None = None
    quota_b_after: str = ""
    low_after_preempt: str = ""


def job_state(slurm: SlurmCluster, job_id: int) -> tuple[str, str]:
    out = slurm.run("squeue", "-h", "-j", str(job_id), "-o", "%T|%r", check=False).strip()
    if out:
        state, _, reason = out.partition("|")
        return state, reason
    line = slurm.run("sacct", "-n", "-X", "-P", "-j", str(job_id), "-o", "State", check=False).strip().splitlines()
    return (line[-1].split()[0] if line else "UNKNOWN"), ""


def wait_for(slurm: SlurmCluster, job_id: int, *states: str, seconds: float = 90.0) -> str:
    """Poll until the job is in one of `states` (a deadline for the test, not a measured assertion)."""
    deadline = time.monotonic() + seconds
    state = ""
    while time.monotonic() < deadline:
        state, _ = job_state(slurm, job_id)
        if state in states:
            return state
        time.sleep(0.2)
    raise AssertionError(f"job {job_id} is {state}, never reached {states}")


def submit(slurm: SlurmCluster, *args: str) -> int:
    out = slurm.run("sbatch", "--parsable", "-o", "/dev/null", "-D", str(slurm.base / "jobs"), *args)
    return int(out.strip().split(";")[0])


def run_scenario(slurm: SlurmCluster) -> Scenario:
    s = Scenario()
    cli = SlurmCli(env=slurm.env)
    s.ids["ok"] = submit(
        slurm, "-A", "ml-research", "-p", "training", "-w", "gpu-01", "--gres=gpu:2", "-J", "ok", "--wrap", "sleep 1"
    )
    s.ids["fail"] = submit(
        slurm,
        "-A",
        "inference",
        "-p",
        "inference",
        "-w",
        "gpu-01",
        "--gres=gpu:h100:1",
        "-J",
        "fail",
        "--wrap",
        "exit 3",
    )
    s.ids["cancel"] = submit(
        slurm,
        "-A",
        "ml-research",
        "-p",
        "interactive",
        "-w",
        "gpu-01",
        "--gres=gpu:1",
        "-J",
        "cancel",
        "--wrap",
        "sleep 300",
    )
    wait_for(slurm, s.ids["cancel"], "RUNNING")
    slurm.run("scancel", str(s.ids["cancel"]))

    # preemption: a low-QOS job holds all 8 GPUs of gpu-02; a high-QOS job needs them
    s.ids["low"] = submit(
        slurm,
        "-A",
        "ml-research",
        "-p",
        "batch",
        "--qos=low",
        "-w",
        "gpu-02",
        "--gres=gpu:8",
        "-J",
        "low",
        "--wrap",
        "sleep 300",
    )
    wait_for(slurm, s.ids["low"], "RUNNING")
    s.ids["high"] = submit(
        slurm,
        "-A",
        "ml-research",
        "-p",
        "training",
        "--qos=high",
        "-w",
        "gpu-02",
        "--gres=gpu:8",
        "-J",
        "high",
        "--wrap",
        "sleep 3",
    )
    wait_for(slurm, s.ids["high"], "RUNNING", "COMPLETED")
    s.low_after_preempt = job_state(slurm, s.ids["low"])[0]

    # quota: team-quota limited to 4 GPUs through sacctmgr; two 3-GPU jobs -> the second waits on QOSGrpGRES
    target = QuotaTarget("qos", "team-quota")
    s.lowered = SacctmgrQuotaWriter(cli).set_gpu_limit(target, expected=None, new=4)
    s.ids["quota_a"] = submit(
        slurm,
        "-A",
        "ml-research",
        "-p",
        "training",
        "--qos=team-quota",
        "-w",
        "gpu-01",
        "--gres=gpu:3",
        "-J",
        "quota-a",
        "--wrap",
        "sleep 300",
    )
    wait_for(slurm, s.ids["quota_a"], "RUNNING")
    s.ids["quota_b"] = submit(
        slurm,
        "-A",
        "ml-research",
        "-p",
        "training",
        "--qos=team-quota",
        "-w",
        "gpu-01",
        "--gres=gpu:3",
        "-J",
        "quota-b",
        "--wrap",
        "sleep 1",
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        s.blocked_state, s.blocked_reason = job_state(slurm, s.ids["quota_b"])
        if s.blocked_reason == "QOSGrpGRES":
            break
        time.sleep(0.2)
    # raise the limit through slurmrestd (unix socket): the blocked job starts
    rest = SlurmRest(socket=slurm.rest_socket)
    try:
        s.raised = RestQuotaWriter(rest).set_gpu_limit(target, expected=4, new=8)
    finally:
        rest.close()
    s.quota_b_after = wait_for(slurm, s.ids["quota_b"], "RUNNING", "COMPLETED")
    slurm.run("scancel", str(s.ids["quota_a"]))
    for name in ("ok", "fail", "high", "quota_b"):
        wait_for(slurm, s.ids[name], "COMPLETED", "FAILED")
    for name in ("cancel", "quota_a"):
        wait_for(slurm, s.ids[name], "CANCELLED")
    # the requeued low job would wait ~2 min (BeginTime) before running again: let it run now, then end it
    slurm.run("scontrol", "update", f"jobid={s.ids['low']}", "StartTime=now")
    wait_for(slurm, s.ids["low"], "RUNNING")
    slurm.run("scancel", str(s.ids["low"]))
    wait_for(slurm, s.ids["low"], "CANCELLED")
    return s
