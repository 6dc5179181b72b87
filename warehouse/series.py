"""Time series for the dashboards' charts, downsampled here so no minute or job rows reach a browser.

A month's queue waits come back as one row per local day and queue (a few hundred rows for a month,
whatever the number of jobs); the dashboard draws them against the queue's objective. The other series
live beside it: series_allocation.py (per cluster and hour), series_inference.py (per service and hour)
and series_daily.py (idle per team, preemptions per scenario, by day).

Hours are the pool's: `local_hour` maps an instant to the start of the local hour holding it, kept as a
naive UTC instant so the two hours a DST change repeats stay apart.
"""

from __future__ import annotations

import polars as pl

from gpusteward import tables
from gpusteward.domain import Month
from warehouse.store import Warehouse

QUEUE_WAIT_DAILY = tables.schema({
    "day": pl.Date,  # the day in `zone`
    "zone": pl.Utf8,  # the time zone whose days these are (the pool's when the publisher passed it)
    "queue": pl.Utf8,  # cluster/partition, as the queue evaluator names it (sla/usage.py)
    "started": pl.Int64,  # records that started that day with an eligible time
    "wait_p95_s": pl.Float64,  # linear 95th percentile of start - eligible, clipped at 0 (as sla/queues.py)
    "wait_max_s": pl.Float64,
})


def local_hour(moment: pl.Expr, tz: str) -> pl.Expr:
    """Naive UTC instant at which the hour of `tz` holding the naive UTC `moment` began.

    The offset is the moment's own, so in the hour a clock falls back twice both hours keep their own
    start; zones whose offset is not whole hours (Asia/Kolkata) start their hours at :30 UTC.
    """
    if tz == "UTC":
        return moment.dt.truncate("1h")
    local = moment.dt.replace_time_zone("UTC").dt.convert_time_zone(tz).dt.replace_time_zone(None)
    return local.dt.truncate("1h") - (local - moment)


def queue_wait_daily(wh: Warehouse, month: Month) -> pl.DataFrame:
    """Per day of `month` (its own time zone) and queue: records started, wait p95 and longest wait.

    Waits follow the queue evaluator: start - eligible over the records that started in the window
    ([start, end)), clock skew clipped at 0, the percentile interpolated linearly.
    """
    sql = """
        WITH started AS (
            SELECT CAST(timezone(?, timezone('UTC', start_time)) AS DATE) AS day,
                   cluster || '/' || coalesce(partition, '?') AS queue,
                   greatest(epoch(start_time - eligible_time), 0.0) AS wait_s
            FROM jobs
            WHERE start_time >= ? AND start_time < ? AND eligible_time IS NOT NULL
        )
        SELECT day, ? AS zone, queue, count(*) AS started,
               quantile_cont(wait_s, 0.95) AS wait_p95_s, max(wait_s) AS wait_max_s
        FROM started GROUP BY day, queue ORDER BY day, queue
    """
    frame = wh.query(sql, [month.tz, month.start.replace(tzinfo=None), month.end.replace(tzinfo=None), month.tz])
    return tables.conform(frame, QUEUE_WAIT_DAILY) if frame.height else tables.empty(QUEUE_WAIT_DAILY)
