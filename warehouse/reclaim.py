"""What the reclaim plan reads at one instant: the running jobs, who waits, and the minutes and windows before it.

Read-only: `gpusteward reclaim plan` runs beside the service on a read-only connection.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from gpusteward import tables
from sla.common import naive_utc
from sla.reclaim_inputs import WAITING_JOBS, ReclaimInputs
from warehouse.store import Warehouse

PENDING_SNAPSHOT_AGE = timedelta(minutes=15)
"""A live queue snapshot counts as "now" for this long: three of the default 5-minute snapshots
(`service.slurm[].interval`), so one missed snapshot does not hide a waiting queue."""


def _read(wh: Warehouse, sql: str, params: list[datetime], frame_schema: pl.Schema) -> pl.DataFrame:
    return tables.conform(wh.query(sql, params), frame_schema)


def plan_instant(wh: Warehouse) -> datetime | None:
    """The default instant of a plan: the minute after the last GPU-minute stored (None without any)."""
    return wh.data_end()


def reclaim_inputs(wh: Warehouse, now: datetime, lookback: timedelta) -> ReclaimInputs:
    """ReclaimInputs at `now` with `lookback` of GPU-minutes and inference windows."""
    at = naive_utc(now)
    start = at - lookback
    running = _read(
        wh,
        "SELECT * FROM jobs WHERE start_time IS NOT NULL AND start_time <= ? AND (end_time IS NULL OR end_time > ?)"
        " ORDER BY cluster, job_id, submit_time",
        [at, at],
        tables.JOBS,
    )
    # Who waits at `now`: job records submitted (and eligible) but not started by then, and the
    # latest live queue snapshot of each cluster when it is recent. A job in both counts once.
    from_records = _read(
        wh,
        "SELECT cluster, job_id, gpus_requested FROM jobs WHERE coalesce(eligible_time, submit_time) <= ?"
        " AND (start_time IS NULL OR start_time > ?) AND (end_time IS NULL OR end_time > ?)",
        [at, at, at],
        WAITING_JOBS,
    )
    from_queue = _read(
        wh,
        "SELECT p.cluster, p.job_id, p.gpus_requested FROM pending_jobs p JOIN ("
        "  SELECT cluster, max(ts) AS ts FROM pending_jobs WHERE ts <= ? AND ts > ? GROUP BY cluster"
        ") latest USING (cluster, ts)",
        [at, at - PENDING_SNAPSHOT_AGE],
        WAITING_JOBS,
    )
    waiting = pl.concat([from_records, from_queue]).unique(["cluster", "job_id"], keep="first", maintain_order=True)
    minutes = _read(
        wh,
        "SELECT g.cluster, g.host, g.gpu, NULL::VARCHAR AS uuid, NULL::VARCHAR AS model_name, m.* EXCLUDE (gpu_key)"
        " FROM gpu_minutes m JOIN gpus g USING (gpu_key) WHERE m.ts >= ? AND m.ts < ?"
        " ORDER BY g.cluster, g.host, g.gpu, m.ts",
        [start, at],
        tables.GPU_MINUTES,
    )
    windows = _read(
        wh,
        "SELECT * FROM inference_windows WHERE ts > ? AND ts <= ? ORDER BY cluster, service, instance, ts",
        [start, at],
        tables.INFERENCE_WINDOWS,
    )
    return ReclaimInputs(now=at, window_start=start, running=running, waiting=waiting, gpu_minutes=minutes,
                         inference_windows=windows)
