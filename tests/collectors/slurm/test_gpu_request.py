"""The GPUs a live job asks for, on real slurmrestd answers of 22.05, 24.05 and 25.11."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from collectors.sacct import _number
from collectors.slurm import shapes
from collectors.slurm.gpu_request import gpu_request
from gpusteward.errors import InputError

DATA = Path(__file__).parents[2] / "data" / "scheduler" / "slurm"
TS = datetime(2026, 10, 1, 12, 0)


def _job(rel: str) -> dict[str, Any]:
    jobs = json.loads((DATA / rel).read_text())["jobs"]
    assert len(jobs) == 1
    return dict(jobs[0])


@pytest.mark.parametrize("version", ["24.05-v0.0.41", "25.11-v0.0.44"])
@pytest.mark.parametrize(("name", "expected"), [
    # tres_req_str names no GPU on these clusters: the request is in tres_per_*; the counts the
    # allocations' gres_detail shows in the same files (per-socket: 2 on the one socket used).
    ("pending", (4, None)),  # tres_per_job gres/gpu:4
    ("type", (1, "h100")),  # tres_per_job gres/gpu:h100:1
    ("multi-types", (1, "h100")),  # tres_per_node gres/gpu:h100:1, one node
    ("per-node", (2, None)),  # tres_per_node gres/gpu:1 on two nodes
    ("per-task", (4, None)),  # tres_per_task gres/gpu=2, two tasks (gres_detail IDX:0-3)
    ("per-socket", (2, None)),  # tres_per_socket gres/gpu:2, one node
    ("multi-nodes", (8, None)),  # tres_per_job gres/gpu:8 over two nodes
])
def test_the_request_is_read_where_slurm_puts_it(version: str, name: str, expected: tuple[int, str | None]) -> None:
    assert gpu_request(_job(f"{version}/slurm-job-gpus-{name}.json"), _number) == expected


def test_tres_req_str_wins_where_it_names_gpus_and_its_types_are_kept() -> None:
    """22.05 with AccountingStorageTRES=gres/gpu: `gres/gpu=N` in tres_req_str, types beside it."""
    jobs = json.loads((DATA / "22.05-local" / "squeue.json").read_text())["jobs"]
    asked = [gpu_request(j, _number) for j in jobs]
    assert (1, "h100") in asked  # tres_req_str gres/gpu=1,gres/gpu:h100=1; tres_per_node gres:gpu:h100:1
    assert (8, None) in asked
    job = {"tres_req_str": "cpu=4,gres/gpu=2", "tres_per_node": "gres/gpu:a100:1", "node_count": 2}
    assert gpu_request(job, _number) == (2, "a100")  # the count is tres_req_str's, the type still read


def test_pending_snapshots_store_the_count_and_the_type() -> None:
    live = {"jobs": [
        {**_job("25.11-v0.0.44/slurm-job-gpus-pending.json"), "job_id": 11},
        {**_job("25.11-v0.0.44/slurm-job-gpus-type.json"), "job_id": 12, "job_state": ["PENDING"]},
    ]}
    pending = shapes.pending_jobs(live, cluster="hpc", ts=TS, source="jobs")
    assert pending.select("job_id", "gpus_requested", "gpu_type").rows() == [(11, 4, None), (12, 1, "h100")]


def test_a_request_field_of_the_wrong_kind_names_the_record_and_the_field() -> None:
    live = {"jobs": [{**_job("25.11-v0.0.44/slurm-job-gpus-pending.json"), "tres_per_job": 4}]}
    with pytest.raises(InputError, match=r"job record 0: tres_per_job is a int"):
        shapes.pending_jobs(live, cluster="hpc", ts=TS, source="jobs")


@given(per=st.integers(1, 16), nodes=st.integers(1, 64), tasks=st.integers(1, 64),
       field=st.sampled_from(["tres_per_job", "tres_per_node", "tres_per_task"]),
       spelling=st.sampled_from(["gres/gpu:{n}", "gres:gpu:{n}", "gres/gpu={n}", "gres/gpu:l4:{n}"]))
def test_a_per_field_request_scales_by_its_unit(per: int, nodes: int, tasks: int, field: str, spelling: str) -> None:
    job = {"tres_req_str": "cpu=1,mem=1G", field: f"cpu:2,{spelling.format(n=per)}",
           "node_count": {"set": True, "infinite": False, "number": nodes}, "tasks": tasks}
    scale = {"tres_per_job": 1, "tres_per_node": nodes, "tres_per_task": tasks}[field]
    count, kind = gpu_request(job, _number)
    assert count == per * scale
    assert kind == ("l4" if ":l4:" in spelling else None)
