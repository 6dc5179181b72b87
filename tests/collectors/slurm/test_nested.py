"""Real Slurm 22.05 output of the nested layout (tests/data/slurm-22.05-nested, captured by
`python -m tests.realslurm.capture_nested`): arrays, the account tree, pending reasons, rejected jobs."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from collectors.sacct import read_sacct
from collectors.sacctmgr import read_assoc_tree
from collectors.slurm import shapes
from gpusteward import tables

DATA = Path(__file__).parents[2] / "data" / "slurm-22.05-nested"
SCENARIO: dict[str, Any] = json.loads((DATA / "scenario.json").read_text())
IDS: dict[str, int] = SCENARIO["ids"]
TS = datetime(2026, 12, 1, 12)


def _load(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def _jobs() -> tuple[pl.DataFrame, pl.DataFrame]:
    jobs, events, problems = read_sacct(_load("sacct.json"), source="sacct.json")
    assert problems == []
    return jobs, events


def test_array_tasks_carry_their_array_and_task() -> None:
    jobs, _ = _jobs()
    tasks = jobs.filter(pl.col("name") == "arr").sort("array_task_id")
    array = SCENARIO["array_job"]
    assert tasks["array_job_id"].to_list() == [array] * 6
    assert tasks["array_task_id"].to_list() == [1, 2, 3, 4, 5, 6]
    # the array's own id is its last task (JobID 1_6 has JobIDRaw 1), each task its own record
    assert tasks.filter(pl.col("job_id") == array)["array_task_id"].to_list() == [6]
    assert tasks["job_id"].n_unique() == 6
    others = jobs.filter(pl.col("name") != "arr")
    assert others["array_job_id"].null_count() == others.height


def test_rejected_at_submit_never_started() -> None:
    """D5: 'Requested node configuration is not available' gave a start event with 5 GPUs."""
    assert "Requested node configuration is not available" in SCENARIO["rejected"]
    jobs, events = _jobs()
    rejected = jobs.filter(pl.col("name") == "too-big").row(0, named=True)
    assert (rejected["state"], rejected["start_time"], rejected["gpus_allocated"]) == ("FAILED", None, None)
    assert rejected["gpus_requested"] == 5
    mine = events.filter(pl.col("job_id") == rejected["job_id"])
    assert sorted(mine["event"]) == ["end", "submit"]


def test_multi_node_gpus_and_cancel_preemption() -> None:
    jobs, events = _jobs()
    row = {r["job_id"]: r for r in jobs.rows(named=True)}
    assert (row[IDS["two_node"]]["gpus_allocated"], row[IDS["two_node"]]["nodes"]) == (8, "gpu-[01-02]")
    assert row[IDS["scav"]]["state"] == "PREEMPTED"
    assert row[IDS["nlp_b"]]["state"] == "CANCELLED"
    assert row[IDS["nlp_b"]]["start_time"] is None
    assert row[IDS["vision_b"]]["reason"] == "AssocGrpGRES"  # the reason it waited, kept after it ran
    scav = events.filter(pl.col("job_id") == IDS["scav"])["event"].to_list()
    assert "preempt" in scav
    assert "requeue" not in scav  # PreemptMode=CANCEL: no second record


def test_rest_and_sacct_give_the_same_jobs() -> None:
    by_cli, _ = _jobs()
    by_rest, _, problems = read_sacct(_load("rest-slurmdb-jobs.json"), source="rest")
    assert problems == []
    key = ["job_id", "submit_time", "start_time", "state", "gpus_allocated", "array_job_id", "array_task_id"]
    assert by_rest.select(key).sort(key).rows() == by_cli.select(key).sort(key).rows()


def _tree_from_rest() -> pl.DataFrame:
    return shapes.association_tree(_load("rest-associations.json"), cluster="stewnest", ts=TS, source="rest")


def test_account_tree_from_rest_matches_sacctmgr() -> None:
    rest = _tree_from_rest()
    _, cli = read_assoc_tree((DATA / "assoc.txt").read_text().splitlines(), ts=TS, source="assoc.txt")
    cols = ["account", "parent", "gpu_limit"]
    assert rest.select(cols).sort("account").rows() == cli.select(cols).sort("account").rows()
    assert dict(rest.select("account", "parent").rows())["vision"] == "research"


@pytest.mark.parametrize("name", ["squeue-pending.json", "rest-jobs-pending.json"])
def test_usage_rolls_up_the_tree(name: str) -> None:
    """D3: with vision and nlp at 4 GPUs each, research (limit 10) holds 8, and both waits show under it."""
    live = _load(name)
    usage = shapes.quota_usage(live, cluster="stewnest", ts=TS, source=name, tree=_tree_from_rest())
    acct = {n: (g, r, p) for k, n, g, r, p in
            usage.select("kind", "name", "gpus_in_use", "jobs_running", "jobs_pending").rows() if k == "account"}
    assert acct["vision"] == (4, 1, 1)
    assert acct["nlp"] == (4, 1, 1)
    assert acct["research"] == (8, 2, 2)
    flat = shapes.quota_usage(live, cluster="stewnest", ts=TS, source=name)
    assert "research" not in flat.filter(pl.col("kind") == "account")["name"].to_list()


@pytest.mark.parametrize("name", ["squeue-pending.json", "rest-jobs-pending.json"])
def test_pending_snapshot_keeps_each_reason(name: str) -> None:
    pending = shapes.pending_jobs(_load(name), cluster="stewnest", ts=TS, source=name)
    assert pending.schema == tables.PENDING_JOBS
    rows = {r["job_id"]: r for r in pending.rows(named=True)}
    assert set(rows) == {IDS["vision_b"], IDS["nlp_b"]}
    assert (rows[IDS["vision_b"]]["account"], rows[IDS["vision_b"]]["gpus_requested"]) == ("vision", 4)
    assert (rows[IDS["nlp_b"]]["account"], rows[IDS["nlp_b"]]["gpus_requested"]) == ("nlp", 2)
    assert {r["reason"] for r in rows.values()} == {"AssocGrpGRES"}
    assert all(r["submit_time"] is not None for r in rows.values())
