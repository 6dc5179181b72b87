"""The month's series charts as page sections: each a subheader, the chart and a caption that says what is
drawn and in which zone, or a note when there is nothing to draw. Pages put them before their tables."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import altair as alt
import polars as pl
import streamlit as st

from dashboards.chart_data import chart_tables
from dashboards.charts import queue_wait_chart, queue_wait_frame
from dashboards.charts_allocation import allocation_chart, allocation_frames
from dashboards.charts_daily import (
    idle_chart,
    idle_frame,
    idle_objective_chart,
    idle_objective_frame,
    preemption_chart,
    preemption_frames,
)
from dashboards.charts_inference import inference_chart, inference_frame
from dashboards.folds import fold, lazy_tabs
from dashboards.tables import show_table
from dashboards.texts import Texts
from dashboards.view import View


def chart_section(tx: Texts, keys: tuple[str, str, str], charts: Sequence[Any] | None, **caption: object) -> None:
    """Subheader `keys[0]`; the charts under the caption `keys[2]` (with `caption`'s values), or, without
    charts, the note `keys[1]`."""
    if headed(tx, keys, bool(charts), **caption):
        for number, chart in enumerate(charts or ()):
            show_chart(chart, tx, key=f"{keys[0]}.data.{number}")


def headed(tx: Texts, keys: tuple[str, str, str], drawn: bool, **caption: object) -> bool:
    """Subheader `keys[0]`, then the caption `keys[2]` when a chart follows (`drawn`), else the note `keys[1]`;
    whether a chart follows."""
    header, none, help_ = keys
    st.subheader(tx(header))
    if not drawn:
        st.info(tx(none))
        return False
    st.caption(tx(help_, **caption))
    return True


def show_chart(chart: Any, tx: Texts, key: str) -> None:
    """The chart, and folded under it the numbers it draws (dashboards/chart_data.py), to read or copy;
    built only when unfolded (`key`: dashboards/folds.py)."""
    st.altair_chart(fitted(chart), width="stretch")
    tables = chart_tables(chart)
    if tables:
        with fold(tx("chart.data"), key) as unfolded:
            for table in tables if unfolded else ():
                show_table(table, tx)


def fitted(chart: Any) -> Any:
    """`chart`, a stacked one (`alt.vconcat`) made to fit the page's width with its axes and legend.

    Streamlit gives a stack of layered panels Vega's `pad` sizing, under which each panel's plot takes the
    page's width and the axis titles and the legend come on top of it: the inference page's chart was 1,138
    px wide in a 940 px column, its legend (which line is which service) cut off. `fit-x` fits the whole stack,
    decorations included, to the width."""
    if isinstance(chart, alt.VConcatChart):
        return chart.properties(autosize=alt.AutoSizeParams(type="fit-x", contains="padding"))
    return chart


def _keys(name: str) -> tuple[str, str, str]:
    return f"chart.{name}.header", f"chart.{name}.none", f"chart.{name}.help"


def _zone(series: pl.DataFrame) -> str:
    """The zone the publisher counted the series' hours or days in (every row carries it)."""
    return str(series["zone"][0]) if series.height else "UTC"


def queue_wait_section(view: View) -> None:
    frame = queue_wait_frame(view)
    chart = [queue_wait_chart(frame, view.tx)] if frame is not None else None
    chart_section(view.tx, ("queues.chart", "queues.chart_none", "queues.chart_help"), chart,
                  zone=_zone(frame) if frame is not None else "UTC")


def allocation_section(view: View) -> None:
    """Per cluster: GPUs allocated against capacity (and the inference reserve), utilisation below. Clusters
    are shared, so a team-filtered view gets a note instead."""
    tx = view.tx
    if view.filters.teams:
        st.subheader(tx("chart.alloc.header"))
        st.caption(tx("chart.alloc.shared"))
        return
    frames = allocation_frames(view)
    clusters = sorted(set(frames.gpus["cluster"])) if frames else []
    if frames is None or not headed(tx, _keys("alloc"), bool(clusters), zone=frames.zone):
        return
    header = _keys("alloc")[0]
    if len(clusters) == 1:
        show_chart(allocation_chart(frames, clusters[0], tx), tx, key=f"{header}.data.0")
        return
    # A tab per cluster, only the chosen one's chart built: each chart is a month of hours, and every chart
    # more on a page cost its open 0.13-0.18 s in the browser (docs/performance.md, "2026-12-03, evening").
    for number, (cluster, (tab, chosen)) in enumerate(zip(clusters, lazy_tabs(clusters, "overview.alloc"),
                                                          strict=True)):
        with tab:
            if chosen:
                show_chart(allocation_chart(frames, cluster, tx), tx, key=f"{header}.data.{number}")


def inference_section(view: View) -> None:
    found = inference_frame(view)
    chart_section(view.tx, _keys("inference"), [inference_chart(*found, view.tx)] if found else None,
                  zone=_zone(view.model.inference_hourly(view.month)))


def idle_section(view: View) -> None:
    """Idle-held GPU-hours by day and team; below, where teams have an `idle_gpu_hours` objective, their
    interactive idle so far this month against it."""
    tx, idle = view.tx, view.config.idle
    frame = idle_frame(view)
    chart_section(tx, _keys("idle"), [idle_chart(frame, tx)] if frame is not None else None,
                  zone=_zone(view.model.idle_daily(view.month)), util=tx.fmt.number(idle.util_below, 1),
                  minutes=idle.min_minutes, mib=tx.fmt.number(idle.held_memory_mib))
    to_date = idle_objective_frame(view) if frame is not None else None
    if to_date is not None:  # its caption says what is drawn below it, so it comes first
        st.caption(tx("chart.idle_to_date_help"))
        show_chart(idle_objective_chart(to_date, tx), tx, key=f"{_keys('idle')[0]}.data.1")


def preemption_section(view: View) -> None:
    found = preemption_frames(view)
    chart_section(view.tx, _keys("preemption"), [preemption_chart(*found, view.tx)] if found else None,
                  zone=_zone(view.model.preemptions_daily(view.month)))
