"""Inference latency p95 and p99 and request rate per service by hour, each against its objective.

From the read model's `inference_hourly` (warehouse/series_inference.py). The objectives are the
month's, as the inference evaluator stored them in sla_results (`latency_p95`, `latency_p99`,
`throughput_rps` of subject_kind service): the month's figure is judged against them, and the hours
show when the service came near or above. An hour with no window (or no request) is a gap.
"""

from __future__ import annotations

import altair as alt
import polars as pl

from dashboards.charts import GAPS, hour_axis, hour_tooltip, on_every_hour, with_rule
from dashboards.texts import Texts
from dashboards.view import View

# chart panel -> (series column, the indicator whose objective it is drawn against)
PANELS = {"p95": ("p95_s", "latency_p95"), "p99": ("p99_s", "latency_p99"), "rps": ("rps", "throughput_rps")}


def inference_frame(view: View) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """(hours, objectives): per service and hour its p95, p99 and request rate (null: no data); per
    service and panel its objective. Services are the evaluator's (those with results this month)."""
    results = view.outputs.results.filter(pl.col("subject_kind") == "service")
    services = sorted(set(results["subject"].drop_nulls().to_list()))
    hourly = view.model.inference_hourly(view.month).filter(pl.col("service").is_in(services))
    if hourly.is_empty():
        return None
    hours = on_every_hour(hourly, view.month, ["service"]).select(
        "local", "service", "p95_s", "p99_s", "rps", "slots", "requests")
    indicator = {ind: panel for panel, (_col, ind) in PANELS.items()}
    objectives = (
        results.filter(pl.col("indicator").is_in(list(indicator)) & pl.col("objective").is_not_null())
        .select(pl.col("subject").alias("service"), pl.col("indicator").replace_strict(indicator).alias("panel"),
                "objective")
        .unique(["service", "panel"]).sort("service", "panel")
    )
    return hours, objectives


def inference_chart(hours: pl.DataFrame, objectives: pl.DataFrame, tx: Texts) -> alt.VConcatChart:
    """Three panels sharing the hour axis: p95, p99 (seconds) and requests per second; a line per
    service and, in its colour, a dashed rule at its objective."""
    service = alt.Color("service:N", title=tx("col.service"))
    panels = []
    for panel, (column, _indicator) in PANELS.items():
        title = tx(f"chart.inference.{panel}")
        lines = alt.Chart(hours).mark_line(invalid=GAPS).encode(
            x=hour_axis(tx),
            y=alt.Y(f"{column}:Q", title=title),
            color=service,
            tooltip=[alt.Tooltip("service:N", title=tx("col.service")), hour_tooltip(tx),
                     alt.Tooltip(f"{column}:Q", title=title, format=".3g"),
                     alt.Tooltip("slots:Q", title=tx("chart.inference.slots"))],
        )
        rules = objectives.filter(pl.col("panel") == panel)
        panels.append(with_rule(lines, rules, "objective:Q", service, [
            alt.Tooltip("service:N", title=tx("col.service")),
            alt.Tooltip("objective:Q", title=tx("chart.objective"), format=".3g")], height=180, title=title))
    return alt.vconcat(*panels)
