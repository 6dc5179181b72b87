"""Demand per cluster and team over the month (pure): GPU-hours of running plus pending work, and the
part of it inside the configured business hours (`quota.business_hours`, each cluster's time zone).

A record pends from eligible (else submit) until it starts (or ends unstarted), asking for
`gpus_requested`; it runs from start to end (a running job up to the end of the data) holding
`gpus_allocated`. Both are clipped to the evaluation window. The recommender weights the business part.
"""

from __future__ import annotations

import re
from datetime import datetime

import polars as pl

from gpusteward.config.schema import Config
from sla.common import classified_jobs, window_of
from sla.inputs import EvaluationInputs

DEMAND = pl.Schema(
    {
        "cluster": pl.Utf8,
        "team": pl.Utf8,
        "gpu_hours": pl.Float64,  # running plus pending GPU-hours inside the window
        "business_gpu_hours": pl.Float64,  # the part of them inside business hours, local time
    }
)
_DAY_S = 86400


def business_hours(text: str) -> tuple[int, int]:
    """"09:00-21:00" as (open, close) seconds after local midnight; close <= open wraps past midnight."""
    found = re.fullmatch(r"\s*(\d\d?):(\d\d)\s*-\s*(\d\d?):(\d\d)\s*", text)
    if found is None:
        raise ValueError(f"quota.business_hours: expected HH:MM-HH:MM, got {text!r}")
    oh, om, ch, cm = (int(g) for g in found.groups())
    if oh > 24 or ch > 24 or om > 59 or cm > 59:
        raise ValueError(f"quota.business_hours: {text!r} is not a time of day")
    return oh * 3600 + om * 60, ch * 3600 + cm * 60


def demand_of(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """DEMAND of the month's job records (teams as attribution gives them)."""
    window = window_of(inputs)
    return demand(classified_jobs(inputs, config), config, window.start, window.end)


def _intervals(jobs: pl.DataFrame, start: datetime, end: datetime) -> pl.DataFrame:
    """(cluster, team, gpus, s, e): pending and running stretches clipped to [start, end)."""
    lo, hi = pl.lit(start, dtype=pl.Datetime("us")), pl.lit(end, dtype=pl.Datetime("us"))
    began = pl.col("start_time")
    pending = jobs.select(
        "cluster", "team",
        pl.coalesce("gpus_requested", "gpus_allocated").fill_null(0).cast(pl.Float64).alias("gpus"),
        pl.coalesce("eligible_time", "submit_time").alias("s"),
        pl.coalesce(began, "end_time", hi).alias("e"),
    )
    running = jobs.filter(began.is_not_null()).select(
        "cluster", "team",
        pl.coalesce("gpus_allocated", "gpus_requested").fill_null(0).cast(pl.Float64).alias("gpus"),
        began.alias("s"),
        pl.coalesce("end_time", hi).alias("e"),
    )
    both = pl.concat([pending, running]).with_columns(
        pl.max_horizontal("s", lo).alias("s"), pl.min_horizontal("e", hi).alias("e")
    )
    return both.filter(pl.col("s").is_not_null() & (pl.col("e") > pl.col("s")) & (pl.col("gpus") > 0))


def _business_seconds(spans: pl.DataFrame, opens: int, closes: int) -> pl.DataFrame:
    """Each local (s, e) span's seconds inside the daily window(s), as `business_s`."""
    windows = [(opens, closes)] if closes > opens else [(opens, _DAY_S), (0, closes)]
    days = spans.with_row_index("_i").with_columns(
        pl.date_ranges(pl.col("s").dt.date(), pl.col("e").dt.date()).alias("_day")
    ).explode("_day")
    midnight = pl.col("_day").cast(pl.Datetime("us"))
    parts = [
        (pl.min_horizontal("e", midnight + pl.duration(seconds=b)) - pl.max_horizontal("s", midnight + pl.duration(
            seconds=a))).dt.total_microseconds().clip(lower_bound=0)
        for a, b in windows
    ]
    inside = days.with_columns(pl.sum_horizontal(parts).alias("_us")).group_by("_i").agg(pl.col("_us").sum())
    return (
        spans.with_row_index("_i")
        .join(inside, on="_i", how="left")
        .with_columns((pl.col("_us").fill_null(0) / 1e6).alias("business_s"))
        .drop("_i", "_us")
    )


def demand(jobs: pl.DataFrame, config: Config, start: datetime, end: datetime) -> pl.DataFrame:
    """DEMAND from classified job records (JOBS plus `team`), window [start, end) in naive UTC."""
    opens, closes = business_hours(config.quota.business_hours)
    spans = _intervals(jobs, start, end).with_columns(  # length in UTC: a DST change does not alter it
        (pl.col("e") - pl.col("s")).dt.total_microseconds().alias("_len_us")
    )
    zones = {c.name: c.timezone for c in config.clusters}
    frames: list[pl.DataFrame] = []
    for cluster in sorted({str(c) for c in spans["cluster"].unique().to_list() if c is not None}):
        mine = spans.filter(pl.col("cluster") == cluster)
        zone = zones.get(cluster, "UTC")
        local = mine.with_columns(
            pl.col(c).dt.replace_time_zone("UTC").dt.convert_time_zone(zone).dt.replace_time_zone(None)
            for c in ("s", "e")
        )
        frames.append(_business_seconds(local, opens, closes))
    if not frames:
        return pl.DataFrame(schema=DEMAND)
    hours = pl.concat(frames).with_columns(
        (pl.col("gpus") * pl.col("_len_us") / 3.6e9).alias("gpu_hours"),
        (pl.col("gpus") * pl.col("business_s") / 3600.0).alias("business_gpu_hours"),
    )
    out = hours.group_by("cluster", "team").agg(pl.col("gpu_hours").sum(), pl.col("business_gpu_hours").sum())
    return out.select([pl.col(n).cast(t) for n, t in DEMAND.items()]).sort("cluster", "team")
