"""GPUs allocated against capacity, and the allocated GPUs' utilisation, per cluster by hour.

From the read model's `allocation_hourly` (warehouse/series_allocation.py): one row per cluster and
hour with telemetry; every other hour of the month is a gap. The capacity drawn is the configured
`clusters.gpus`; where the cluster has an inference reserve, the most GPUs other work may hold
(capacity - min_gpus) is drawn as a dashed rule against the GPUs held by work other than online
inference.
"""

from __future__ import annotations

from dataclasses import dataclass

import altair as alt
import polars as pl

from dashboards.charts import GAPS, hour_axis, hour_tooltip, on_every_hour, with_rule
from dashboards.texts import Texts
from dashboards.view import View

SERIES = ("reporting", "allocated", "other")


@dataclass(frozen=True)
class AllocationFrames:
    gpus: pl.DataFrame  # local, cluster, series, label, gpus (null: no data that hour)
    limits: pl.DataFrame  # cluster, limit, label, gpus: capacity, and the reserve's ceiling for other work
    util: pl.DataFrame  # local, cluster, util_pct, engine_pct (null: no data that hour)
    zone: str


def allocation_frames(view: View) -> AllocationFrames | None:
    """The month's hours per cluster; None with a team filter (clusters are shared) or without data."""
    if view.filters.teams:
        return None
    hourly = view.model.allocation_hourly(view.month)
    if view.filters.clusters:
        hourly = hourly.filter(pl.col("cluster").is_in(list(view.filters.clusters)))
    if hourly.is_empty():
        return None
    tx = view.tx
    zone = str(hourly["zone"][0])
    grid = on_every_hour(hourly, view.month, ["cluster"]).with_columns(
        (pl.col("allocated_gpus") - pl.col("inference_gpus")).alias("other_gpus"),
        (pl.col("util_mean") * 100.0).alias("util_pct"),
        pl.when(pl.col("util_minutes") > 0)
        .then(pl.col("engine_minutes") / pl.col("util_minutes") * 100.0).alias("engine_pct"),
    )
    gpus = pl.concat([
        grid.select("local", "cluster", pl.lit(name).alias("series"), pl.lit(tx(f"chart.alloc.{name}")).alias("label"),
                    pl.col(f"{name}_gpus").alias("gpus"))
        for name in SERIES
    ])
    limits = _limits(view, sorted(set(hourly["cluster"].to_list())))
    reserved = limits.filter(pl.col("limit") == "reserve")["cluster"].to_list()
    # Work other than inference is drawn only where a reserve sets a ceiling on it.
    gpus = gpus.filter((pl.col("series") != "other") | pl.col("cluster").is_in(reserved))
    return AllocationFrames(gpus, limits, grid.select("local", "cluster", "util_pct", "engine_pct"), zone)


def _limits(view: View, clusters: list[str]) -> pl.DataFrame:
    tx = view.tx
    capacity = {c.name: c.gpus for c in view.config.clusters if c.gpus > 0}
    rows: list[dict[str, object]] = []
    for cluster in clusters:
        if cluster in capacity:
            rows.append({"cluster": cluster, "limit": "capacity", "label": tx("chart.alloc.capacity"),
                         "gpus": float(capacity[cluster])})
        for line in view.config.protection.inference_reserve:
            if line.cluster == cluster and cluster in capacity:
                rows.append({"cluster": cluster, "limit": "reserve",
                             "label": tx("chart.alloc.reserve", n=line.min_gpus),
                             "gpus": float(capacity[cluster] - line.min_gpus)})
    schema = {"cluster": pl.Utf8, "limit": pl.Utf8, "label": pl.Utf8, "gpus": pl.Float64}
    return pl.DataFrame(rows, schema=schema, orient="row")


def allocation_chart(frames: AllocationFrames, cluster: str, tx: Texts) -> alt.VConcatChart:
    """One cluster: GPUs reporting, allocated and held by other work than inference, with the capacity
    and the reserve's ceiling as rules; below, the allocated GPUs' mean utilisation."""
    gpus = frames.gpus.filter(pl.col("cluster") == cluster)
    limits = frames.limits.filter(pl.col("cluster") == cluster)
    util = frames.util.filter(pl.col("cluster") == cluster)
    x = hour_axis(tx)
    # Room for the longest series name ("Held by other work than online inference"): Vega cuts at 160 px.
    series = alt.Color("label:N", title=tx("chart.series"), legend=alt.Legend(labelLimit=320))
    lines = alt.Chart(gpus).mark_line(invalid=GAPS).encode(
        x=x,
        y=alt.Y("gpus:Q", title=tx("chart.gpus")),
        color=series,
        tooltip=[hour_tooltip(tx), alt.Tooltip("label:N", title=tx("chart.series")),
                 alt.Tooltip("gpus:Q", title=tx("chart.gpus"), format=".1f")],
    )
    top = with_rule(lines, limits, "gpus:Q", series, [alt.Tooltip("label:N", title=tx("chart.limit")),
                                                      alt.Tooltip("gpus:Q", title=tx("chart.gpus"), format=".0f")],
                    height=240, title=tx("chart.alloc.title", cluster=cluster))
    bottom = alt.Chart(util, height=140).mark_line(invalid=GAPS).encode(
        x=x,
        y=alt.Y("util_pct:Q", title=tx("chart.util_axis"), scale=alt.Scale(domain=[0, 100])),
        tooltip=[hour_tooltip(tx), alt.Tooltip("util_pct:Q", title=tx("chart.util_pct"), format=".1f"),
                 alt.Tooltip("engine_pct:Q", title=tx("chart.engine_pct"), format=".0f")],
    )
    return alt.vconcat(top, bottom)
