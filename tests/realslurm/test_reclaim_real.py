"""Reclaiming on the real Slurm cluster: warn -> grace -> requeue or cancel; busy, exempt and silent jobs left alone.

Five jobs hold a GPU each. Their records come from the real sacct; their telemetry is written to the
warehouse directly, minute by minute from the minute after the last start, so the reclaimer's time
(the ingest watermark) runs ahead of the wall clock and the test needs no real hour. The policies
are the issue's, scaled down: idle for 3 minutes (with [idle] min_minutes = 2), 2 minutes of grace.
The requeue goes through `scontrol`, the cancel through slurmrestd (unix socket, rest_auth/local).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from collectors.batch import CollectedBatch
from collectors.reclaim_actions import ReclaimActions, ReclaimTarget
from collectors.slurm import SlurmCli, SlurmClient, SlurmRest
from collectors.slurm.job_actions import SlurmJobActions
from gpusteward.config import load_config
from gpusteward.errors import InputError
from gpusteward.tables import GPU_MINUTES, conform
from service.reclaim_job import Reclaim
from tests.realslurm.cluster import CLUSTER, SlurmCluster
from tests.realslurm.scenario import job_state, submit, wait_for
from warehouse import Warehouse, open_warehouse
from warehouse.reclaim_ledger import decisions

CONFIG = f"""
[warehouse]
path = "w.duckdb"

[[clusters]]
name = "{CLUSTER}"
gpus = 16

[teams.ml]
entitled_share = 1.0
accounts = ["ml-research"]

[[rules]]
scenario = "training"
match = {{ partition = "training" }}

[[rules]]
scenario = "interactive"
match = {{ partition = "interactive" }}

[idle]
min_minutes = 2

[reclaim]
receivers = ["owners"]

[[reclaim.policies]]
name = "stuck-training"
scenario = "training"
when = "idle"
idle_for = "3m"
grace = "2m"
action = "requeue"
mode = "auto"
exempt = {{ job_names = ["keep-*"] }}

[[reclaim.policies]]
name = "idle-notebooks"
scenario = "interactive"
when = "idle"
idle_for = "3m"
grace = "2m"
action = "cancel"
mode = "auto"

[[alerts.receivers]]
name = "owners"
kind = "jsonl"
path = "owners.jsonl"
"""
# name -> (partition, node, GPU utilisation; None: the host sends nothing)
JOBS = {
    "idle-train": ("training", "gpu-01", 0.0),
    "idle-notebook": ("interactive", "gpu-01", 0.0),
    "busy-train": ("training", "gpu-01", 85.0),
    "keep-train": ("training", "gpu-01", 0.0),
    "silent-train": ("training", "gpu-02", None),
}


@pytest.fixture(scope="module")
def submitted(slurm: SlurmCluster) -> Iterator[dict[str, int]]:
    ids = {name: submit(slurm, "-A", "ml-research", "-p", part, "-w", node, "--gres=gpu:1", "-J", name,
                        "--requeue", "--wrap", "sleep 600")
           for name, (part, node, _util) in JOBS.items()}
    for job_id in ids.values():
        wait_for(slurm, job_id, "RUNNING")
    yield ids
    slurm.run("scancel", *map(str, ids.values()), check=False)  # the session's later tests need the GPUs
    for job_id in ids.values():
        wait_for(slurm, job_id, "CANCELLED", "COMPLETED")


def _minutes(ids: dict[str, int], first: datetime, count: int) -> pl.DataFrame:
    rows = [
        {"cluster": CLUSTER, "host": JOBS[name][1], "gpu": i, "uuid": f"GPU-{name}", "ts": first + timedelta(minutes=m),
         "job_id": str(ids[name]), "gpu_util": JOBS[name][2], "fb_used_mib": 4096.0}
        for i, name in enumerate(JOBS) if JOBS[name][2] is not None
        for m in range(count)
    ]
    return pl.DataFrame(rows).cast({"gpu": pl.Int32})


def _restarts(slurm: SlurmCluster, job_id: int) -> int:
    shown = slurm.run("scontrol", "show", "job", str(job_id))
    return int(shown.split("Restarts=")[1].split()[0])


def test_idle_jobs_are_warned_then_requeued_or_cancelled_and_the_others_left_alone(
    slurm: SlurmCluster, submitted: dict[str, int], tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    (tmp_path / "gpusteward.toml").write_text(CONFIG, encoding="utf-8")
    config = load_config(tmp_path / "gpusteward.toml")
    cli = SlurmCli(env=slurm.env)
    rest = SlurmRest(socket=slurm.rest_socket)
    request.addfinalizer(rest.close)
    by_rest = SlurmJobActions(cli=cli, rest=rest)  # cancel over slurmrestd
    by_cli = SlurmJobActions(cli=cli)
    actions: dict[str, ReclaimActions] = {CLUSTER: by_rest}
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        batch = _recorded(slurm, cli, submitted)
        wh.ingest(batch.source, batch.frames)
        starts = batch.frames["jobs"].filter(pl.col("job_id").is_in(list(submitted.values())))["start_time"]
        latest = starts.max()
        assert isinstance(latest, datetime)
        first = latest.replace(second=0, microsecond=0) + timedelta(minutes=1)
        reclaim = Reclaim(config, wh, actions.get)
        # Four idle minutes: the idle jobs are warned (not yet acted on); nothing else is.
        _ingest_minutes(wh, submitted, first, 4)
        reclaim.run(first)
        warned = decisions(wh)
        idle = {str(submitted["idle-train"]), str(submitted["idle-notebook"])}
        assert set(warned["job"]) == idle
        assert set(warned["kind"]) == {"warning"}
        owners = [json.loads(line) for line in (tmp_path / "owners.jsonl").read_text(encoding="utf-8").splitlines()]
        assert {a["labels"]["job_id"] for a in owners} == idle
        assert {job_state(slurm, j)[0] for j in submitted.values()} == {"RUNNING"}
        # Three more: the grace is over; the training job is requeued (scontrol), the notebook cancelled
        # (slurmrestd). The busy, the exempt and the silent-host jobs run on.
        _ingest_minutes(wh, submitted, first + timedelta(minutes=4), 3)
        reclaim.run(first + timedelta(minutes=7))
        done = decisions(wh).filter(pl.col("kind") == "action").sort("action")
        assert done.select("action", "state", "transport").rows() == [
            ("cancel", "done", "slurmrestd"), ("requeue", "done", "scontrol")]
        assert wait_for(slurm, submitted["idle-notebook"], "CANCELLED") == "CANCELLED"
        assert _restarts(slurm, submitted["idle-train"]) == 1
        for name in ("busy-train", "keep-train", "silent-train"):
            assert job_state(slurm, submitted[name])[0] == "RUNNING", name
        # A retried cancel of the cancelled notebook is not an error.
        again = by_cli.act(ReclaimTarget(CLUSTER, str(submitted["idle-notebook"]), "cancel"))
        assert again.state == "already_ended"
        plan_reasons = _reasons(reclaim, wh, first + timedelta(minutes=7), submitted)
        assert plan_reasons == {"busy-train": "busy", "keep-train": "exempt_name", "silent-train": "no_data"}


def _recorded(slurm: SlurmCluster, cli: SlurmCli, ids: dict[str, int]) -> CollectedBatch:
    """The session's job records once slurmdbd holds every submitted job as started (it records them a
    moment after slurmctld starts them; a deadline for the test, not a measured assertion)."""
    deadline = time.monotonic() + 60
    while True:
        try:
            batch = SlurmClient(CLUSTER, cli=cli).jobs(*slurm.window())
            jobs = batch.frames["jobs"].filter(pl.col("job_id").is_in(list(ids.values())))
            if jobs["start_time"].null_count() == 0 and set(jobs["job_id"]) == set(ids.values()):
                return batch
        except InputError:  # "Nothing found" before slurmdbd has recorded the first job
            pass
        if time.monotonic() > deadline:
            raise AssertionError("slurmdbd never recorded the submitted jobs as started")
        time.sleep(0.5)


def _ingest_minutes(wh: Warehouse, ids: dict[str, int], first: datetime, count: int) -> None:
    wh.ingest("telemetry", {"gpu_minutes": conform(_minutes(ids, first, count), GPU_MINUTES)})


def _reasons(reclaim: Reclaim, wh: Warehouse, at: datetime, ids: dict[str, int]) -> dict[str, str]:
    from sla.reclaim import reclaim_plan
    from sla.reclaim_inputs import lookback
    from warehouse.reclaim import reclaim_inputs

    plan = reclaim_plan(reclaim_inputs(wh, at, lookback(reclaim.config)), reclaim.config)
    names = {str(v): k for k, v in ids.items()}
    return {names[r["job_id"]]: r["reason"] for r in plan.to_dicts()
            if r["job_id"] in names and r["verdict"] == "left_alone"}
