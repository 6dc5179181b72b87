"""Idle-held GPU-hours per team by day, and preemptions per day with the training preemption ratio.

From the read model's `idle_daily` and `preemptions_daily` (warehouse/series_daily.py), days of the
pool's zone. The idle chart's definition is the config's `[idle]` (stated in its caption); the
preemption chart draws, for each cluster with a `training_preemption` line, the day's share of
training records that ended PREEMPTED against the line's `max_ratio`. The line itself is checked over
a rolling window minute by minute (sla/protection_preemption.py); a day below `min_records` ended
records is not judged, and is a gap here.
"""

from __future__ import annotations

from collections.abc import Callable

import altair as alt
import polars as pl

from dashboards.charts import GAPS, day_axis, day_tooltip, month_days, with_rule
from dashboards.texts import Texts
from dashboards.view import View
from gpusteward.domain import Scenario


def _scoped(frame: pl.DataFrame, view: View) -> pl.DataFrame:
    f = view.filters
    for column, values in (("cluster", f.clusters), ("team", f.teams), ("scenario", f.scenarios)):
        if values and column in frame.columns:
            frame = frame.filter(pl.col(column).is_in(list(values)))
    return frame


def _named(column: pl.Expr, values: pl.Series, name: Callable[[object], str]) -> pl.Expr:
    """`column`'s keys as the reader reads them (a team's display name, a scenario in the language)."""
    return column.replace_strict({key: name(key) for key in values.unique().to_list()}, return_dtype=pl.Utf8)


def idle_frame(view: View) -> pl.DataFrame | None:
    """Per day and team: idle-held and idle GPU-hours (teams by their display names); None without data,
    or for a month stored before the days carried idle minutes (null, never drawn as 0)."""
    daily = _scoped(view.model.idle_daily(view.month), view).filter(pl.col("idle_held_gpu_hours").is_not_null())
    if daily.is_empty():
        return None
    frame = (
        daily.group_by("day", "team")
        .agg(pl.col("idle_held_gpu_hours").sum(), pl.col("idle_gpu_hours").sum(), pl.col("gpu_hours").sum())
        .with_columns(_named(pl.col("team"), daily["team"], view.team_name).alias("team_name"))
        .sort("day", "team")
    )
    return frame if frame.height else None


def idle_chart(frame: pl.DataFrame, tx: Texts) -> alt.Chart:
    """A bar a day, stacked by team: the GPU-hours held idle with memory kept."""
    chart: alt.Chart = alt.Chart(frame, height=280).mark_bar().encode(
        x=day_axis(tx),
        y=alt.Y("idle_held_gpu_hours:Q", title=tx("chart.idle_held_h"), stack="zero"),
        color=alt.Color("team_name:N", title=tx("col.team")),
        tooltip=[alt.Tooltip("team_name:N", title=tx("col.team")), day_tooltip(tx),
                 alt.Tooltip("idle_held_gpu_hours:Q", title=tx("chart.idle_held_h"), format=".1f"),
                 alt.Tooltip("idle_gpu_hours:Q", title=tx("chart.idle_h"), format=".1f"),
                 alt.Tooltip("gpu_hours:Q", title=tx("chart.allocated_h"), format=".1f")],
    )
    return chart


def idle_objective_frame(view: View) -> pl.DataFrame | None:
    """Per day and team with an `idle_gpu_hours` objective: its interactive idle GPU-hours so far this month
    (idle and idle-held, as the interactive evaluator counts them) and the month's objective; None when no
    team has one. The objective is the month's, so the running total is what meets it, up to the last day
    with data."""
    results = view.outputs.results
    objectives = results.filter(
        (pl.col("indicator") == "idle_gpu_hours") & (pl.col("subject_kind") == "team")
        & pl.col("objective").is_not_null()
    ).select(pl.col("subject").alias("team"), "objective").unique("team")
    daily = _scoped(view.model.idle_daily(view.month), view).filter(pl.col("idle_held_gpu_hours").is_not_null())
    if objectives.is_empty() or daily.is_empty():
        return None
    last = daily["day"].max()
    idle = (
        daily.filter(pl.col("scenario") == Scenario.INTERACTIVE.value)
        .group_by("day", "team").agg((pl.col("idle_gpu_hours") + pl.col("idle_held_gpu_hours")).sum().alias("idle"))
    )
    days = month_days(view.month).filter(pl.col("day") <= last)
    frame = (
        days.join(objectives, how="cross")
        .join(idle, on=["day", "team"], how="left")
        .sort("team", "day")
        .with_columns(pl.col("idle").fill_null(0.0).cum_sum().over("team").alias("to_date"))
    )
    return frame.with_columns(_named(pl.col("team"), frame["team"], view.team_name).alias("team_name"))


def idle_objective_chart(frame: pl.DataFrame, tx: Texts) -> alt.LayerChart:
    """A running total per team and, in its colour, a dashed rule at its monthly objective."""
    team = alt.Color("team_name:N", title=tx("col.team"))
    line = alt.Chart(frame).mark_line(point=True).encode(
        x=day_axis(tx),
        # A short axis title: Vega fits the whole chart into its height, and a rotated title longer than the
        # plot squeezed the plot to nothing (the lines flat, the ticks and most of the legend gone).
        y=alt.Y("to_date:Q", title=tx("chart.idle_to_date_axis")),
        color=team,
        tooltip=[alt.Tooltip("team_name:N", title=tx("col.team")), day_tooltip(tx),
                 alt.Tooltip("to_date:Q", title=tx("chart.idle_to_date_h"), format=".1f"),
                 alt.Tooltip("objective:Q", title=tx("chart.objective"), format=".0f")],
    )
    rules = frame.select("team_name", "objective").unique().sort("team_name")
    return with_rule(line, rules, "objective:Q", team, [
        alt.Tooltip("team_name:N", title=tx("col.team")),
        alt.Tooltip("objective:Q", title=tx("chart.objective"), format=".0f")], height=220,
        title=tx("chart.idle_to_date_h"))


def preemption_frames(view: View) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """(per day and scenario: preempted records; per day and cluster with a training line: the ratio and
    the line's max_ratio); None when no record was preempted and no cluster has a line."""
    daily = _scoped(view.model.preemptions_daily(view.month), view)
    tx = view.tx
    counts = (
        daily.filter(pl.col("preempted") > 0).group_by("day", "scenario").agg(pl.col("preempted").sum())
        .with_columns(_named(pl.col("scenario"), daily["scenario"], lambda s: tx.fmt.term("scenario", str(s)))
                      .alias("scenario_name"))
        .sort("day", "scenario")
    )
    lines = {line.cluster: line for line in view.config.protection.training_preemption}
    training = (
        daily.filter((pl.col("scenario") == Scenario.TRAINING.value) & pl.col("cluster").is_in(list(lines)))
        .group_by("day", "cluster").agg(pl.col("ended").sum(), pl.col("preempted").sum())
    )
    rows = []
    for cluster, line in sorted(lines.items()):
        mine = month_days(view.month).join(training.filter(pl.col("cluster") == cluster).drop("cluster"),
                                           on="day", how="left").with_columns(pl.lit(cluster).alias("cluster"))
        rows.append(mine.with_columns(
            pl.when(pl.col("ended") >= line.min_records).then(pl.col("preempted") / pl.col("ended")).alias("ratio"),
            pl.lit(line.max_ratio).alias("max_ratio"),
        ))
    schema = {"day": pl.Date, "cluster": pl.Utf8, "ended": pl.Int64, "preempted": pl.Int64, "ratio": pl.Float64,
              "max_ratio": pl.Float64}
    ratios = pl.concat(rows).select(list(schema)) if rows else pl.DataFrame(schema=schema)
    if counts.is_empty() and ratios.is_empty():
        return None
    return counts, ratios


def preemption_chart(counts: pl.DataFrame, ratios: pl.DataFrame, tx: Texts) -> alt.VConcatChart:
    """Preempted records a day stacked by scenario; below, per cluster with a line, the training ratio
    (a gap on days below the line's minimum of records) and a dashed rule at its max_ratio."""
    bars = alt.Chart(counts, height=220, title=tx("chart.preempted")).mark_bar().encode(
        x=day_axis(tx),
        y=alt.Y("preempted:Q", title=tx("chart.preempted"), stack="zero"),
        color=alt.Color("scenario_name:N", title=tx("col.scenario")),
        tooltip=[alt.Tooltip("scenario_name:N", title=tx("col.scenario")), day_tooltip(tx),
                 alt.Tooltip("preempted:Q", title=tx("chart.preempted"))],
    )
    if ratios.is_empty():
        return alt.vconcat(bars)
    cluster = alt.Color("cluster:N", title=tx("col.cluster"))
    ratio = alt.Chart(ratios).mark_line(point=True, invalid=GAPS).encode(
        x=day_axis(tx),
        y=alt.Y("ratio:Q", title=tx("chart.preemption_ratio"), axis=alt.Axis(format="%")),
        color=cluster,
        tooltip=[alt.Tooltip("cluster:N", title=tx("col.cluster")), day_tooltip(tx),
                 alt.Tooltip("ratio:Q", title=tx("chart.preemption_ratio"), format=".1%"),
                 alt.Tooltip("preempted:Q", title=tx("chart.preempted")),
                 alt.Tooltip("ended:Q", title=tx("chart.ended"))],
    )
    limits = ratios.select("cluster", "max_ratio").unique().sort("cluster")
    stacked = alt.vconcat(bars, with_rule(ratio, limits, "max_ratio:Q", cluster, [
        alt.Tooltip("cluster:N", title=tx("col.cluster")),
        alt.Tooltip("max_ratio:Q", title=tx("chart.objective"), format=".0%")], height=180,
        title=tx("chart.preemption_ratio")))
    # Scenarios above, clusters below: a legend each, not one mixing both under "Scenario, Cluster".
    stacked.resolve = alt.Resolve(scale=alt.ScaleResolveMap(color="independent"))
    return stacked
