"""Inference latency p95/p99 and request rate per service and hour of the pool's zone, for the dashboards.

The inference evaluator's definitions (sla/inference.py), applied per hour instead of per month: a
stored window belongs to the 5-minute slot before its end (`ts` ends a window; the month holds the
windows ending in (start, end]), the replicas' bucket increases are summed per service, and
Prometheus' `histogram_quantile` is applied to the sum (sla.histogram). An hour with no window has no
row; an hour whose windows saw no request has a null latency (no data, never 0).
"""

from __future__ import annotations

import polars as pl

from gpusteward import tables
from gpusteward.domain import Month
from sla.histogram import quantiles_of, summed_histograms
from warehouse.series import local_hour
from warehouse.store import Warehouse

HOUR_S = 3600.0
SLOT = "5m"

INFERENCE_HOURLY = tables.schema({
    "hour": tables.TS,  # start of the hour in `zone`, as a naive UTC instant
    "zone": pl.Utf8,
    "service": pl.Utf8,
    "slots": pl.Int64,  # 5-minute slots of the hour some replica reported (12 when none was missed)
    "requests": pl.Float64,  # finished requests in the hour, every replica
    "errors": pl.Float64,
    "rps": pl.Float64,  # requests / 3600
    "observations": pl.Float64,  # requests in the latency histogram
    "p95_s": pl.Float64,  # end-to-end latency p95 of the hour, seconds; null without observations
    "p99_s": pl.Float64,
})


def inference_hourly(wh: Warehouse, month: Month) -> pl.DataFrame:
    """INFERENCE_HOURLY for `month`: one row per service and hour with a stored window."""
    lo, hi = month.start.replace(tzinfo=None), month.end.replace(tzinfo=None)
    windows = wh.query(
        "SELECT service, ts, requests, errors, e2e_le, e2e_counts FROM inference_windows WHERE ts > ? AND ts <= ?",
        [lo, hi],
    )
    if windows.height == 0:
        return tables.empty(INFERENCE_HOURLY)
    slot = (pl.col("ts").cast(tables.TS) - pl.duration(seconds=1)).dt.truncate(SLOT)
    windows = windows.with_columns(slot.alias("slot")).with_columns(local_hour(pl.col("slot"), month.tz).alias("hour"))
    counts = windows.group_by("service", "hour").agg(
        pl.col("slot").n_unique().cast(pl.Int64).alias("slots"),
        pl.col("requests").sum(),
        pl.col("errors").sum(),
    )
    latency = quantiles_of(summed_histograms(windows, ["service", "hour"], "e2e_le", "e2e_counts"),
                           {"p95_s": 0.95, "p99_s": 0.99})
    out = (
        counts.join(latency.select("service", "hour", "observations", "p95_s", "p99_s"), on=["service", "hour"],
                    how="left")
        .with_columns(pl.lit(month.tz).alias("zone"), (pl.col("requests") / HOUR_S).alias("rps"))
        .sort("service", "hour")
    )
    return tables.conform(out, INFERENCE_HOURLY)
