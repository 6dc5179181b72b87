"""Charts over the read model's downsampled series (warehouse/series*.py), each with its objective drawn in.

This module holds the queue-wait chart and what the others share: the hours of a month with their local
labels, and the time axes. The other charts live in charts_allocation.py, charts_inference.py and
charts_daily.py.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Final

import altair as alt
import polars as pl

from dashboards.texts import Texts
from dashboards.view import View
from gpusteward.domain import Month

HOUR_S = 3600.0
# A line breaks at a null value instead of joining its neighbours: an hour with no data is a gap, never 0.
GAPS: Final = "break-paths-show-domains"


def month_hours(month: Month, zone: str) -> pl.DataFrame:
    """`hour` (naive UTC start) and `local` (wall-clock start in `zone`) of every hour of `month` in `zone`.

    Steps are real hours, so a DST day has 23 or 25 of them; the local label reads as the pool's clock.
    """
    local_month = month.in_zone(zone)
    start, end = local_month.start.replace(tzinfo=None), local_month.end.replace(tzinfo=None)
    hours = pl.datetime_range(start, end, "1h", closed="left", eager=True, time_unit="us").alias("hour")
    frame = pl.DataFrame(hours)
    return frame.with_columns(
        pl.col("hour").dt.replace_time_zone("UTC").dt.convert_time_zone(zone).dt.replace_time_zone(None).alias("local")
    )


def month_days(month: Month) -> pl.DataFrame:
    """`day`: every calendar day of `month` (the same in every zone)."""
    first = date(month.year, month.month, 1)
    after = date(month.year + month.month // 12, month.month % 12 + 1, 1)
    return pl.DataFrame(pl.date_range(first, after, "1d", closed="left", eager=True).alias("day"))


def on_every_hour(series: pl.DataFrame, month: Month, keys: Sequence[str]) -> pl.DataFrame:
    """`series` (one row per `keys` and hour with data) on every hour of the month for each key seen: the
    hours without a row come back with null values, which the charts draw as gaps."""
    zone = str(series["zone"][0])
    grid = month_hours(month, zone).join(series.select(*keys).unique(), how="cross")
    return grid.join(series.drop("zone"), on=["hour", *keys], how="left").sort(*keys, "hour")


def hour_axis(tx: Texts) -> alt.X:
    """The pool's wall clock: local times stored as naive values, read as UTC so no browser zone shifts them."""
    return alt.X("utcyearmonthdatehours(local):T", title=tx("chart.hour"), axis=alt.Axis(format="%m-%d"))


def hour_tooltip(tx: Texts) -> alt.Tooltip:
    return alt.Tooltip("utcyearmonthdatehours(local):T", title=tx("chart.hour"), format="%Y-%m-%d %H:00")


def day_axis(tx: Texts) -> alt.X:
    """Calendar days of the pool's zone, read as UTC, one tick a day at most."""
    return alt.X("utcyearmonthdate(day):T", title=tx("chart.day"),
                 axis=alt.Axis(format="%m-%d", tickCount={"interval": "day", "step": 1}))


def day_tooltip(tx: Texts) -> alt.Tooltip:
    return alt.Tooltip("utcyearmonthdate(day):T", title=tx("chart.day"), format="%Y-%m-%d")


def with_rule(line: alt.Chart, rules: pl.DataFrame, y: str, color: alt.Color, tooltip: list[alt.Tooltip], *,
              height: int, title: str | None = None) -> alt.LayerChart:
    """`line` and, when `rules` has rows, a dashed horizontal rule at each row's `y` in the row's colour: an
    objective, a capacity or a protection line's limit."""
    layers = [line]
    if rules.height:
        layers.append(alt.Chart(rules).mark_rule(strokeDash=[6, 4]).encode(y=y, color=color, tooltip=tooltip))
    if title is None:
        return alt.LayerChart(layer=layers, height=height)
    return alt.LayerChart(layer=layers, height=height, title=title)


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
    day = day_axis(tx)
    lines = alt.Chart(frame).mark_line(point=True).encode(
        x=day,
        y=alt.Y("p95_h:Q", title=tx("chart.wait_p95_h")),
        color=queue,
        tooltip=[
            alt.Tooltip("queue:N", title=tx("col.queue")),
            day_tooltip(tx),
            alt.Tooltip("p95_h:Q", title=tx("chart.wait_p95_h"), format=".2f"),
            alt.Tooltip("started:Q", title=tx("chart.started")),
            alt.Tooltip("objective_h:Q", title=tx("chart.objective_h"), format=".2f"),
        ],
    )
    return with_rule(lines, frame, "objective_h:Q", queue, [
        alt.Tooltip("queue:N", title=tx("col.queue")),
        alt.Tooltip("objective_h:Q", title=tx("chart.objective_h"), format=".2f")], height=320)
