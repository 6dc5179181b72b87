"""Jobs on the nested layout (issue 19), submitted once per session, with what each step left behind.

An array of six tasks, a 2-node job, a job that exits 3, one a SIGKILL ends, a job rejected at submit; then vision and
nlp each run 4 GPUs under research's limit of 10, so a further vision job (4 GPUs) waits on the
parent's limit and an nlp job (2 GPUs, nlp's limit 5) on the child's; the live queue is captured
while both wait; the nlp job is cancelled while still pending; then a scavenger job is preempted
(PreemptMode=CANCEL) by a high-QOS job.
"""

from __future__ import annotations

import json
import subprocess
import time
from dataclasses import dataclass, field
from typing import Any

from tests.realslurm.cluster import SlurmCluster
from tests.realslurm.scenario import job_state, submit, wait_for

SACCT_P_FORMAT = (
    "JobID,JobIDRaw,Cluster,User,JobName,Account,Partition,QOS,State,ExitCode,DerivedExitCode,Reason,"
    "Submit,Eligible,Start,End,AllocTRES,ReqTRES,NodeList,Timelimit"
)


@dataclass
class NestedScenario:
    ids: dict[str, int] = field(default_factory=dict)
    array_job: int = 0
    rejected: str = ""  # what sbatch said
    pending_reasons: dict[str, str] = field(default_factory=dict)
    squeue_pending: Any = None  # `squeue --json` while the two jobs waited on limits
    rest_pending: Any = None  # GET /slurm/v0.0.38/jobs at the same moment
    scav_after: str = ""


def _wait_reason(slurm: SlurmCluster, job_id: int, reason: str, seconds: float = 30.0) -> str:
    deadline = time.monotonic() + seconds
    got = ""
    while time.monotonic() < deadline:
        _, got = job_state(slurm, job_id)
        if got == reason:
            return got
        time.sleep(0.2)
    return got


def wait_recorded(slurm: SlurmCluster, job_id: int, seconds: float = 30.0) -> None:
    """Until `sacct --json` holds `job_id`: slurmctld hands job records to slurmdbd a moment after they end."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if job_id in {j["job_id"] for j in json.loads(slurm.run("sacct", "-a", "-D", "-X", "--json"))["jobs"]}:
            return
        time.sleep(0.5)
    raise AssertionError(f"job {job_id} not in sacct --json after {seconds:.0f} s")


def run_nested(slurm: SlurmCluster) -> NestedScenario:
    s = NestedScenario()
    s.array_job = submit(slurm, "--array=1-6", "-A", "vision", "-p", "dev", "--gres=gpu:1", "-J", "arr",
                         "--wrap", "sleep 1")
    s.ids["two_node"] = submit(slurm, "-N2", "--gres=gpu:4", "-A", "platform", "-p", "train", "-J", "two-node",
                               "--wrap", "sleep 1")
    s.ids["fail"] = submit(slurm, "-A", "nlp", "-p", "dev", "--gres=gpu:1", "-J", "fail", "--wrap", "exit 3")
    # ended by SIGKILL, as the kernel's OOM killer ends a job: ExitCode 0:9
    s.ids["killed"] = submit(slurm, "-A", "nlp", "-p", "dev", "--gres=gpu:1", "-J", "killed", "--wrap", "kill -9 $$")
    refused = subprocess.run(
        ["sbatch", "--parsable", "-o", "/dev/null", "-D", str(slurm.base / "jobs"), "-N1", "--gres=gpu:5", "-A",
         "platform", "-p", "train", "-J", "too-big", "--wrap", "sleep 1"],
        capture_output=True, text=True, env={**slurm._env()}, timeout=60, check=False,
    )
    s.rejected = (refused.stderr or refused.stdout).strip()
    for name in ("two_node", "fail", "killed"):
        wait_for(slurm, s.ids[name], "COMPLETED", "FAILED")
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and slurm.run("squeue", "-h", "-j", str(s.array_job), check=False).strip():
        time.sleep(0.2)

    # research (limit 10) -> vision (8) and nlp (5): 4 + 4 running
    s.ids["vision_a"] = submit(slurm, "-A", "vision", "-p", "train", "-w", "gpu-01", "--gres=gpu:4", "-J", "vision-a",
                               "--wrap", "sleep 300")
    s.ids["nlp_a"] = submit(slurm, "-A", "nlp", "-p", "train", "-w", "gpu-02", "--gres=gpu:4", "-J", "nlp-a",
                            "--wrap", "sleep 300")
    for name in ("vision_a", "nlp_a"):
        wait_for(slurm, s.ids[name], "RUNNING")
    # vision 4+4=8 fits vision's 8, research 12 > 10: the parent binds
    s.ids["vision_b"] = submit(slurm, "-A", "vision", "-p", "train", "--gres=gpu:4", "-J", "vision-b",
                               "--wrap", "sleep 1")
    # nlp 4+2=6 > nlp's 5, research 10 fits: the child binds
    s.ids["nlp_b"] = submit(slurm, "-A", "nlp", "-p", "train", "--gres=gpu:2", "-J", "nlp-b", "--wrap", "sleep 1")
    for name in ("vision_b", "nlp_b"):
        s.pending_reasons[name] = _wait_reason(slurm, s.ids[name], "AssocGrpGRES")
    s.squeue_pending = json.loads(slurm.run("squeue", "--json"))
    s.rest_pending = json.loads(
        slurm.run("curl", "-s", "--unix-socket", slurm.rest_socket, "http://x/slurm/v0.0.38/jobs")
    )
    time.sleep(1.5)  # so that the cancel lands seconds after eligible, as a user's would
    slurm.run("scancel", str(s.ids["nlp_b"]))  # cancelled while pending
    wait_for(slurm, s.ids["nlp_b"], "CANCELLED")
    slurm.run("scancel", str(s.ids["vision_a"]))
    wait_for(slurm, s.ids["vision_b"], "RUNNING", "COMPLETED")
    wait_for(slurm, s.ids["vision_b"], "COMPLETED")
    slurm.run("scancel", str(s.ids["nlp_a"]))

    # PreemptMode=CANCEL: a scavenger job holds gpu-03's 4 GPUs; a high-QOS job needs them
    s.ids["scav"] = submit(slurm, "-A", "platform", "-p", "train", "--qos=scavenger", "-w", "gpu-03", "--gres=gpu:4",
                           "-J", "scav", "--wrap", "sleep 300")
    wait_for(slurm, s.ids["scav"], "RUNNING")
    s.ids["urgent"] = submit(slurm, "-A", "platform", "-p", "train", "--qos=high", "-w", "gpu-03", "--gres=gpu:4",
                             "-J", "urgent", "--wrap", "sleep 1")
    wait_for(slurm, s.ids["urgent"], "COMPLETED")
    s.scav_after = wait_for(slurm, s.ids["scav"], "PREEMPTED", "CANCELLED", "PENDING", "RUNNING")
    for name in ("vision_a", "nlp_a"):
        wait_for(slurm, s.ids[name], "CANCELLED")
    wait_recorded(slurm, max(s.ids.values()))
    return s
