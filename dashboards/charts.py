"""Charts over the read model's downsampled series (warehouse/series.py), each with its objective drawn in."""

from __future__ import annotations

import altair as alt
import polars as pl

from dashboards.texts import Texts
from dashboards.view import View

HOUR_S = 3600.0


def queue_wait_frame(view: View) -> pl.DataFrame | None:
    """Per day and queue with a wait p95 objective: the day's p95 and the objective, in hours."""
    objectives = (
        view.outputs.results.filter((pl.col("subject_kind") == "queue") & (pl.col("indicator") == "queue_wait_p95")
                                    & pl.col("objective").is_not_null())
        .select(pl.col("subject").alias("queue"), (pl.col("objective") / HOUR_S).alias("objective_h"))
        .unique("queue")
    )
    daily = view.model.queue_wait_daily(view.month)
    if view.filters.clusters:
        daily = daily.filter(pl.col("queue").str.split("/").list.first().is_in(list(view.filters.clusters)))
    frame = daily.join(objectives, on="queue", how="inner").select(
        "day", "zone", "queue", "started", (pl.col("wait_p95_s") / HOUR_S).alias("p95_h"), "objective_h"
    ).sort("queue", "day")
    return frame if frame.height else None


def queue_wait_chart(frame: pl.DataFrame, tx: Texts) -> alt.LayerChart:
    """A line per queue (its daily p95) and, in the same colour, a dashed rule at its objective."""
    queue = alt.Color("queue:N", title=tx("col.queue"))
    # Days are calendar dates already in the pool's zone: read and label them as UTC so the viewer's
    # browser zone does not shift them, one tick a day at most.
    day = alt.X("utcyearmonthdate(day):T", title=tx("chart.day"),
                axis=alt.Axis(format="%m-%d", tickCount={"interval": "day", "step": 1}))
    lines = alt.Chart(frame).mark_line(point=True).encode(
        x=day,
        y=alt.Y("p95_h:Q", title=tx("chart.wait_p95_h")),
        color=queue,
        tooltip=[
            alt.Tooltip("queue:N", title=tx("col.queue")),
            alt.Tooltip("utcyearmonthdate(day):T", title=tx("chart.day"), format="%Y-%m-%d"),
            alt.Tooltip("p95_h:Q", title=tx("chart.wait_p95_h"), format=".2f"),
            alt.Tooltip("started:Q", title=tx("chart.started")),
            alt.Tooltip("objective_h:Q", title=tx("chart.objective_h"), format=".2f"),
        ],
    )
    rules = alt.Chart(frame).mark_rule(strokeDash=[6, 4]).encode(y="objective_h:Q", color=queue)
    return alt.LayerChart(layer=[lines, rules], height=320)
