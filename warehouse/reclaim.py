"""What the reclaim plan reads at one instant: the running jobs, who waits, and the minutes and windows before it.

Read-only: `gpusteward reclaim plan` runs beside the service on a read-only connection.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from gpusteward import tables
from sla.common import naive_utc
from sla.reclaim_inputs import WAITING_JOBS, ReclaimInputs
from sla.reclaim_replay import IDLE_STRETCHES
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
        "SELECT cluster, job_id, gpus_requested, partition, gpu_type FROM jobs"
        " WHERE coalesce(eligible_time, submit_time) <= ?"
        " AND (start_time IS NULL OR start_time > ?) AND (end_time IS NULL OR end_time > ?)",
        [at, at, at],
        WAITING_JOBS,
    )
    from_queue = _read(
        wh,
        "SELECT p.cluster, p.job_id, p.gpus_requested, p.partition, p.gpu_type"
        " FROM pending_jobs p JOIN ("
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


def idle_stretches(wh: Warehouse, start: datetime, end: datetime, util_below: float, min_minutes: int) -> pl.DataFrame:
    """IDLE_STRETCHES (sla.reclaim_replay) in [start, end): each GPU's runs of consecutive minutes of one job
    with utilisation (GR_ENGINE_ACTIVE x 100 where present, else GPU_UTIL) below `util_below`, at least
    `min_minutes` long; a minute without a utilisation ends a run, as in sla.idle_states. One pass over
    the packed minutes, for a replay to know when a job could be idle long enough to be reclaimed."""
    frame = wh.query(
        "WITH low AS ("
        "  SELECT gpu_key, job_key, minute,"
        "         minute - row_number() OVER (PARTITION BY gpu_key, job_key ORDER BY minute) AS run"
        "  FROM gpu_minute_rows"
        "  WHERE minute >= epoch_us(?::TIMESTAMP) // 60000000 AND minute < epoch_us(?::TIMESTAMP) // 60000000"
        "    AND job_key IS NOT NULL AND coalesce((engine_e4 / 10000)::REAL::DOUBLE * 100.0, gpu_util) < ?"
        ") SELECT g.cluster, j.job_id, make_timestamp(min(l.minute) * 60000000::BIGINT) AS first,"
        "  make_timestamp((max(l.minute) + 1) * 60000000::BIGINT) AS stop"
        " FROM low l JOIN gpus g USING (gpu_key) JOIN job_labels j USING (job_key)"
        " GROUP BY g.cluster, l.gpu_key, j.job_id, l.run HAVING count(*) >= ? ORDER BY first",
        [naive_utc(start), naive_utc(end), util_below, min_minutes],
    )
    return tables.conform(frame, IDLE_STRETCHES)


def workload_records(wh: Warehouse, start: datetime, end: datetime) -> list[dict[str, object]]:
    """(cluster, job_ref, name) of the Kueue Workloads' records running at some time in [start, end): whose
    pods' GPU-minutes are theirs (sla.reclaim.workload_minutes)."""
    frame = wh.query(
        "SELECT DISTINCT cluster, job_ref, name FROM jobs WHERE job_ref IS NOT NULL AND start_time IS NOT NULL"
        " AND start_time < ? AND (end_time IS NULL OR end_time > ?) ORDER BY cluster, job_ref",
        [naive_utc(end), naive_utc(start)],
    )
    return frame.to_dicts()


def inference_windows(wh: Warehouse, start: datetime, end: datetime) -> pl.DataFrame:
    """INFERENCE_WINDOWS ending in (start, end]."""
    return _read(wh, "SELECT * FROM inference_windows WHERE ts > ? AND ts <= ? ORDER BY cluster, service, ts",
                 [naive_utc(start), naive_utc(end)], tables.INFERENCE_WINDOWS)
