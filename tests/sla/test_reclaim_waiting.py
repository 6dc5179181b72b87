"""Who waits for an idle notebook's GPUs (`idle_while_waiting`): jobs of its partition and GPU type only, where
the records say them; where they do not, every job waiting in the cluster, as before."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gpusteward.tables import GPU_MINUTES, JOBS, PENDING_JOBS
from sla.reclaim import reclaim_plan
from sla.reclaim_inputs import WAITING_JOBS
from tests.sla.builders import at, frame, job
from tests.sla.reclaim_builders import ALL_IDLE, NOW, gpu_minutes_of, notebook, reclaim_config, reclaim_inputs


def _waiting(*jobs: tuple[str | None, str | None, int]) -> pl.DataFrame:
    rows = [{"cluster": "east", "job_id": 900 + i, "partition": p, "gpu_type": t, "gpus_requested": g}
            for i, (p, t, g) in enumerate(jobs)]
    return pl.DataFrame(rows, schema=WAITING_JOBS)


def _plan(waiting: pl.DataFrame, **notebook_fields: Any) -> dict[str, Any]:
    plan = reclaim_plan(
        reclaim_inputs(running=[notebook(1, **notebook_fields)], gpu_minutes=gpu_minutes_of(1, ALL_IDLE),
                       waiting_jobs=waiting),
        reclaim_config(),
    )
    rows: list[dict[str, Any]] = plan.filter(pl.col("job_id") == "1").to_dicts()
    assert len(rows) == 1
    return rows[0]


@pytest.mark.parametrize(
    ("waiting", "fields", "expected"),
    [
        # another partition's jobs cannot take an interactive GPU
        ([("train", None, 4)], {"gpu_type": "a100"}, ("left_alone", "nobody_waiting", 0, 0)),
        # Slurm's list of partitions a pending job may run in: one of them is the notebook's
        ([("train,interactive", None, 4)], {"gpu_type": "a100"}, ("candidate", None, 1, 4)),
        # the same partition, another GPU model: it waits for H100s, the notebook holds an A100
        ([("interactive", "h100", 2)], {"gpu_type": "a100"}, ("left_alone", "nobody_waiting", 0, 0)),
        ([("interactive", "a100,h100", 2), ("interactive", "h100", 8)], {"gpu_type": "a100"},
         ("candidate", None, 1, 2)),
        # a record that does not say its GPU type (an untyped squeue request, Kueue before admission): any type
        ([("interactive", None, 2)], {"gpu_type": "a100"}, ("candidate", None, 1, 2)),
        # a notebook whose record does not say its GPU type: every waiting job of its partition
        ([("interactive", "h100", 3), (None, None, 1), ("train", None, 5)], {"gpu_type": None},
         ("candidate", None, 2, 4)),
    ],
    ids=["other-partition", "partition-list", "other-gpu-type", "one-of-two-types", "type-unsaid", "job-unsaid"],
)
def test_only_jobs_that_could_use_the_gpus_count_as_waiting(
    waiting: list[tuple[str | None, str | None, int]], fields: dict[str, Any], expected: tuple[Any, ...]
) -> None:
    row = _plan(_waiting(*waiting), **fields)
    assert (row["verdict"], row["reason"], row["waiting_jobs"], row["waiting_gpus"]) == expected


def test_the_warehouse_gives_the_waiting_jobs_partitions_and_gpu_types(tmp_path: Path) -> None:
    from warehouse import open_warehouse
    from warehouse.reclaim import reclaim_inputs as read_inputs

    jobs = [notebook(1, gpu_type="a100"),
            job(4, partition="interactive", submit=10, start=None, end=None, state="PENDING", gpu_type="h100")]
    snapshot = {"cluster": "east", "ts": NOW - timedelta(minutes=5), "submit_time": at(0)}
    pending = [{**snapshot, "job_id": 7, "partition": "train,interactive", "gpus_requested": 2},
               {**snapshot, "job_id": 8, "partition": "interactive", "gpus_requested": 4, "gpu_type": "h100"}]
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        wh.ingest("test", {"jobs": frame(jobs, JOBS), "pending_jobs": frame(pending, PENDING_JOBS),
                           "gpu_minutes": frame(gpu_minutes_of(1, ALL_IDLE), GPU_MINUTES)})
        inputs = read_inputs(wh, NOW, timedelta(hours=3))
    assert inputs.waiting.select("job_id", "partition", "gpu_type").sort("job_id").rows() == [
        (4, "interactive", "h100"), (7, "train,interactive", None), (8, "interactive", "h100")]
    row = reclaim_plan(inputs, reclaim_config()).row(by_predicate=pl.col("job_id") == "1", named=True)
    # jobs 4 and 8 (the live queue's `gres/gpu:h100`) want H100s; the snapshot's job 7 may run in
    # interactive and says no type: it counts
    assert (row["verdict"], row["waiting_jobs"], row["waiting_gpus"]) == ("candidate", 1, 2)
