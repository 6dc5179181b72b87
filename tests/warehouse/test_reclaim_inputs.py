"""What the reclaim plan reads at one instant, from a real warehouse: who runs, who waits, which minutes."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path
from typing import Any

import polars as pl

from gpusteward.tables import GPU_MINUTES, JOBS, PENDING_JOBS
from tests.sla.builders import at, frame, job
from tests.sla.reclaim_builders import NOW, gpu_minutes_of
from warehouse import open_warehouse
from warehouse.reclaim import plan_instant, reclaim_inputs


def _pending(ts: Any, *job_ids: int) -> list[dict[str, Any]]:
    return [{"cluster": "east", "ts": ts, "job_id": j, "gpus_requested": 1, "submit_time": at(0)} for j in job_ids]


def _stored(tmp_path: Path) -> Path:
    jobs = [
        job(2, start=0, end=None, state="RUNNING"),  # runs at NOW
        job(3, start=0, end=100),  # ended before NOW
        job(4, submit=10, start=None, end=None, state="PENDING"),  # waits
        job(5, submit=10, start=300, end=400),  # waited at NOW, started later
        job(6, submit=300, start=None, end=None, state="PENDING"),  # submitted after NOW
        job(9, submit=10, start=None, end=None, state="PENDING", gpus=0),  # waits for no GPU
    ]
    pending = _pending(NOW - timedelta(minutes=5), 4, 7) + _pending(NOW - timedelta(hours=1), 8)
    minutes = frame(gpu_minutes_of(2, [0.0] * 300), GPU_MINUTES).with_columns(
        pl.lit("GPU-h1-0").alias("uuid"), pl.lit("H100").alias("model_name")
    )
    db = tmp_path / "w.duckdb"
    with open_warehouse(db) as wh:
        wh.ingest("test", {"jobs": frame(jobs, JOBS), "pending_jobs": frame(pending, PENDING_JOBS),
                           "gpu_minutes": minutes})
    return db


def test_reclaim_inputs_cut_the_warehouse_around_now(tmp_path: Path) -> None:
    db = _stored(tmp_path)
    with open_warehouse(db, read_only=True) as wh:
        inputs = reclaim_inputs(wh, NOW, timedelta(hours=2))
        last = plan_instant(wh)
    assert inputs.running["job_id"].to_list() == [2]
    # Records that had not started by NOW and the latest fresh queue snapshot; job 4 is in both, once.
    assert sorted(inputs.waiting["job_id"].to_list()) == [4, 5, 7, 9]
    assert inputs.waiting.filter(pl.col("job_id") == 9)["gpus_requested"].to_list() == [0]
    assert (inputs.gpu_minutes["ts"].min(), inputs.gpu_minutes["ts"].max()) == (NOW - timedelta(hours=2),
                                                                               NOW - timedelta(minutes=1))
    assert (inputs.now, inputs.window_start) == (NOW, NOW - timedelta(hours=2))
    assert last == at(300)  # the minute after the last GPU-minute stored


def test_a_reservation_and_labels_stored_with_the_record_reach_the_reclaim_plan(tmp_path: Path) -> None:
    """Migration 030: the running records carry their reservation and labels; a record that says none keeps
    "" / {}, and a later read of the same record that does not say (a `sacct -P` dump without the column)
    keeps what the first one said."""
    from sla.reclaim import reclaim_plan
    from tests.sla.reclaim_builders import reclaim_config

    config = reclaim_config("""
[[reclaim.policies]]
name = "general"
scenario = "general_compute"
when = "idle"
exempt = { reservations = ["maint*"], labels = { keep = "yes" } }

[[rules]]
scenario = "general_compute"
match = { partition = "cpu*" }
""")
    running = [job(j, partition="cpu1", start=0, end=None, state="RUNNING", reservation=r, labels="{}")
               for j, r in ((2, "maint-gpu"), (3, ""))]
    minutes = pl.concat([frame(gpu_minutes_of(j, [0.0] * 300, host=f"h{j}"), GPU_MINUTES) for j in (2, 3)])
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        wh.ingest("test", {"jobs": frame(running, JOBS), "gpu_minutes": minutes})
        unsaid = [{**r, "reservation": None, "labels": None} for r in running]
        wh.ingest("test", {"jobs": frame(unsaid, JOBS)})
        inputs = reclaim_inputs(wh, NOW, timedelta(hours=2))
    assert inputs.running.select("job_id", "reservation", "labels").sort("job_id").rows() == [
        (2, "maint-gpu", "{}"), (3, "", "{}")]
    plan = reclaim_plan(inputs, config)
    assert plan.select("job_id", "verdict", "reason").sort("job_id").rows() == [
        ("2", "left_alone", "exempt_reservation"), ("3", "candidate", None)]
