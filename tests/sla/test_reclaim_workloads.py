"""A Kueue Workload's record against its pods' GPU-minutes: dcgm-exporter labels them `namespace/pod`, and a
Job's pods are named after the Job, which the Workload's record names (`name`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from gpusteward.tables import GPU_MINUTES
from sla.reclaim import reclaim_plan, workload_minutes
from tests.sla.builders import frame, minutes
from tests.sla.reclaim_builders import ALL_IDLE, BUSY, notebook, reclaim_config, reclaim_inputs, waiting


def _workload(job_id: int, ref: str, job_name: str, gpus: int = 1) -> dict[str, Any]:
    return notebook(job_id, job_ref=ref, name=job_name, gpus=gpus, gpus_allocated=gpus, labels="{}", reservation="")


def test_pods_named_after_the_job_are_the_workloads() -> None:
    jobs = [_workload(1, "default/job-train-4f2a1", "train"), _workload(2, "default/job-train-big-9c0d2", "train-big")]
    rows = [
        *minutes("default/train-x7k2p", [0.0], host="n1"),
        *minutes("default/train-big-0-q8r4t", [0.0], host="n2"),  # an indexed Job's pod: the longer name wins
        *minutes("other/train-x7k2p", [0.0], host="n3"),  # another namespace's pod
        *minutes("default/job-train-4f2a1", [0.0], host="n4"),  # labelled with the Workload itself
        *minutes("12", [0.0], host="n5"),  # a Slurm job
    ]
    mapped = workload_minutes(frame(rows, GPU_MINUTES), jobs)
    assert mapped.sort("host")["job_id"].to_list() == [
        "default/job-train-4f2a1", "default/job-train-big-9c0d2", "other/train-x7k2p", "default/job-train-4f2a1",
        "12"]


def test_a_workload_is_idle_only_when_every_pod_gpu_is() -> None:
    """Two pods of one 2-GPU notebook Workload: idle on both, it is a candidate; one pod busy, it is busy; one
    pod silent, its data is partial (no data is never idle)."""

    config = reclaim_config()

    def plan(second: Sequence[float | None]) -> tuple[Any, ...]:
        gpu_rows = [*minutes("default/lab-a1b2c", ALL_IDLE, host="n1"),
                    *minutes("default/lab-d3e4f", second, host="n2")]
        inputs = reclaim_inputs(running=[_workload(1, "default/job-lab-1", "lab", 2)], gpu_minutes=gpu_rows,
                                waiting_jobs=waiting(4))
        row = reclaim_plan(inputs, config).row(0, named=True)
        return row["job_id"], row["job"], row["verdict"], row["reason"]

    assert plan(ALL_IDLE) == ("default/job-lab-1", "default/job-lab-1", "candidate", None)
    assert plan([*ALL_IDLE[:-1], BUSY]) == ("default/job-lab-1", "default/job-lab-1", "left_alone", "busy")
    assert plan([*ALL_IDLE[:-10], *[None] * 10]) == ("default/job-lab-1", "default/job-lab-1", "left_alone",
                                                     "partial_data")
