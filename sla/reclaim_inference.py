"""Inference replicas with no traffic: since when a service has had no requests, and which replicas may go.

A service's traffic comes from its inference windows (one per replica endpoint and interval). Walking
back from `now`, the service has been without traffic since the end of its last window with
requests, or since the start of the first gap in its windows: a stretch nobody measured is unknown,
never quiet. A service whose latest window ended more than one window length before `now` is
`no_data`.

Which job records serve which service is the configured `[[inference.service_jobs]]` rules' answer
(sla.service_jobs); a replica no rule ties to a service is left alone (`no_service`). Of a quiet
service's replicas the oldest `max(min_replicas, scale_to)` stay; the others are candidates, newest
first, as long as the cluster's online inference keeps at least its protection-line reserve
(`protection.inference_reserve` `min_gpus`, `peak_min_gpus` inside its peak window) of GPUs held;
a replica whose release would cross it is left alone (`inference_reserve`).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import polars as pl

from gpusteward.config.schema import Config
from gpusteward.tables import INFERENCE_WINDOWS, conform
from sla.protection_common import in_peak, peak_window
from sla.service_jobs import ServiceMatcher

GAP_TOLERANCE = timedelta(minutes=1)
"""Windows of one endpoint meet end to start; scrape jitter may leave this much between them."""


def quiet_since(windows: pl.DataFrame, now: datetime, window_start: datetime) -> tuple[str, datetime | None]:
    """("no_data" | "busy" | "quiet", quiet since) of one service's windows."""
    rows = windows.filter(pl.col("ts") <= now).sort("ts", descending=True).select(
        (pl.col("ts") - pl.duration(seconds=pl.col("window_s"))).alias("start"), pl.col("ts").alias("end"), "requests"
    ).to_dicts()
    if not rows or rows[0]["end"] < now - (rows[0]["end"] - rows[0]["start"]) - GAP_TOLERANCE:
        return "no_data", None
    covered_from: datetime = rows[0]["end"]
    for row in rows:
        if row["end"] < covered_from - GAP_TOLERANCE:
            break  # nobody measured the time between this window and the later ones
        if row["requests"] is None or row["requests"] > 0:
            # A window of unknown count is as good as a busy one: traffic may have been there.
            return ("busy", None) if row["end"] >= rows[0]["end"] else ("quiet", row["end"])
        covered_from = min(covered_from, row["start"])
    return "quiet", max(covered_from, window_start)


def reserve_at(config: Config, cluster: str, now: datetime) -> int:
    """GPUs the cluster's online inference keeps held at `now` (0 without a reserve line)."""
    reserve = 0
    for line in config.protection.inference_reserve:
        if line.cluster != cluster:
            continue
        limit = line.min_gpus
        peak = peak_window(config, line.peak)
        if peak is not None and line.peak_min_gpus is not None:
            inside = pl.select(in_peak(pl.lit(now, dtype=pl.Datetime("us")), peak)).item()
            limit = line.peak_min_gpus if inside else limit
        reserve = max(reserve, limit)
    return reserve


def services_of(jobs: list[dict[str, Any]], config: Config, windows: pl.DataFrame) -> list[str | None]:
    """The service each job record serves, by the configured rules (None where no rule says)."""
    known = windows["service"].drop_nulls().unique().sort().to_list() if windows.height else []
    matcher = ServiceMatcher(config.inference.service_jobs, known)
    return [matcher.service_of(job) for job in jobs]


def windows_of(inference_windows: pl.DataFrame) -> pl.DataFrame:
    return conform(inference_windows, INFERENCE_WINDOWS)
