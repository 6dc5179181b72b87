"""Slurm shards of time-sliced GPUs (issue 25): a job that asked `--gres=shard:N` holds gres/shard and
no gres/gpu (AccountingStorageTRES=gres/gpu,gres/shard; slurm.conf `Gres=gpu:2,shard:8`). Each shard
is one GPU slot in `gpus_allocated`, which the node's `[[capacity.shared]]` rule divides by replicas."""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from collectors.sacct import read_sacct
from collectors.slurm.sacct_text import read_sacct_text
from collectors.slurm.shapes import gpu_or_shard_in_tres, pending_jobs
from gpusteward.capacity import with_shared_gpus
from gpusteward.config.capacity import SharedGpus

DATA = Path(__file__).parents[2] / "data"
SACCT_P = (DATA / "slurm-22.05-nested" / "sacct-P.txt").read_text().splitlines()
RULE = [SharedGpus(hosts="*-nb-ts-*", replicas=4, cluster="east")]


def _shard_line(alloc: str, req: str = "billing=1,cpu=1,gres/shard=1,mem=1000M,node=1") -> str:
    """The fixture's single-GPU record as a notebook on a time-sliced node of cluster east."""
    fields = SACCT_P[2].split("|")
    header = SACCT_P[0].split("|")
    fields[header.index("Cluster")] = "east"
    fields[header.index("AllocTRES")] = alloc
    fields[header.index("ReqTRES")] = req
    fields[header.index("NodeList")] = "east-nb-ts-01"
    return "|".join(fields)


@pytest.mark.parametrize(
    ("tres", "slots"),
    [
        ("cpu=12,mem=120G,node=1,billing=12,gres/shard=1", 1),
        ("billing=1,cpu=1,gres/shard:a10g=2,gres/shard=2,mem=1000M,node=1", 2),  # typed and untyped: the total
        ("cpu=1,gres/shard:a10g=3", 3),  # typed only: their sum
        ("cpu=1,gres/shard:a10g=3,gres/shard:l4=2,mem=1G", 5),
        ("cpu=1,gres/gpu=1,gres/shard=40", 1),  # a whole GPU too: gres/gpu says it
        ("cpu=1,mem=1G", None),
    ],
)
def test_a_tres_string_counts_shards_when_no_gpu_is_named(tres: str, slots: int | None) -> None:
    assert gpu_or_shard_in_tres(tres) == slots


def test_sacct_text_reads_a_shard_as_one_slot_and_the_rule_makes_it_a_quarter() -> None:
    line = _shard_line("billing=12,cpu=12,gres/shard=1,mem=120G,node=1")
    jobs, _, problems = read_sacct_text([SACCT_P[0], line], source="p")
    assert not problems
    assert jobs.select("gpus_requested", "gpus_allocated", "gpu_type", "gpu_equivalents").rows() == [(1, 1, None, None)]
    shared = with_shared_gpus(jobs, RULE)
    assert shared["gpu_equivalents"].to_list() == [pytest.approx(0.25)]


def test_sacct_text_refuses_a_negative_shard_count() -> None:
    _, _, problems = read_sacct_text([SACCT_P[0], _shard_line("cpu=1,gres/shard=-1,node=1")], source="p")
    assert len(problems) == 1
    assert "shard count is negative" in str(problems[0])


def _json_job() -> tuple[dict[str, Any], dict[str, Any]]:
    raw = json.loads((DATA / "scheduler" / "sacct-22.05.8-local.json").read_text())
    job = next(j for j in raw["jobs"] if any(t["name"] == "gpu" for t in j["tres"]["allocated"]))
    return raw, job


def test_sacct_json_reads_a_shard_as_one_slot() -> None:
    raw, job = _json_job()
    shard = copy.deepcopy(job)
    shard["job_id"] += 1_000_000
    shard["cluster"] = "east"
    shard["nodes"] = "east-nb-ts-01"
    shard_tres = {"type": "gres", "name": "shard", "id": 1007, "count": 1}
    for side in ("allocated", "requested"):
        shard["tres"][side] = [t for t in shard["tres"][side] if t["type"] != "gres"] + [shard_tres]
    jobs, _, problems = read_sacct({**raw, "jobs": [job, shard]}, source="j")
    assert not problems
    row = jobs.filter(pl.col("job_id") == shard["job_id"])
    assert row.select("gpus_requested", "gpus_allocated", "gpu_equivalents").rows() == [(1, 1, None)]
    shared = with_shared_gpus(row, RULE)
    assert shared["gpu_equivalents"].to_list() == [pytest.approx(0.25)]
    whole = jobs.filter(pl.col("job_id") == job["job_id"])
    assert with_shared_gpus(whole, RULE)["gpu_equivalents"].to_list() == whole["gpu_equivalents"].to_list()


def test_sacct_json_refuses_a_negative_shard_count() -> None:
    raw, job = _json_job()
    bad = copy.deepcopy(job)
    bad["tres"]["allocated"] = [t for t in bad["tres"]["allocated"] if t["type"] != "gres"] + [
        {"type": "gres", "name": "shard", "id": 1007, "count": -1}
    ]
    _, _, problems = read_sacct({**raw, "jobs": [bad]}, source="j")
    assert len(problems) == 1
    assert "shard count -1 is negative" in str(problems[0])


def test_a_pending_shard_request_asks_for_one_slot() -> None:
    doc = {
        "jobs": [
            {
                "job_id": 41,
                "job_state": ["PENDING"],
                "account": "nlp",
                "partition": "interactive",
                "qos": "high",
                "user_name": "li.wei",
                "state_reason": "Resources",
                "submit_time": 1790000000,
                "tres_req_str": "cpu=12,mem=120G,node=1,billing=12,gres/shard=1",
            }
        ]
    }
    frame = pending_jobs(doc, cluster="east", ts=datetime(2026, 10, 1), source="squeue")
    assert frame["gpus_requested"].to_list() == [1]


def test_a_gres_list_of_neither_gpu_nor_shard_is_no_gpu() -> None:
    raw, job = _json_job()
    cpu_only = copy.deepcopy(job)
    cpu_only["tres"]["allocated"] = [t for t in cpu_only["tres"]["allocated"] if t["type"] != "gres"]
    cpu_only["tres"]["requested"] = [t for t in cpu_only["tres"]["requested"] if t["type"] != "gres"]
    jobs, _, _ = read_sacct({**raw, "jobs": [cpu_only]}, source="j")
    assert jobs["gpus_allocated"].to_list() == [None]
