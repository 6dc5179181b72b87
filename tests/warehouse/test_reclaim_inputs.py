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
