"""The overview page body: headline metrics, usage and idle charts, SLA results, breaches, completeness."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import polars as pl
import streamlit as st

from dashboards import frames
from dashboards.data import OverviewData
from dashboards.folds import fold
from dashboards.tables import show_table, show_wrapped
from dashboards.texts import Texts
from reports.locale import Lang
from reports.model import Quantity


def _not_available(tx: Texts, source: str) -> None:
    what = tx.fmt.term("source", source)
    st.info(tx("common.not_available", reason=tx("common.no_rows", what=what)))


def _data_age(data: OverviewData, tx: Texts) -> None:
    if data.data_as_of is None or data.data_age is None:
        st.caption(tx("page.data_age_unknown"))
        return
    age = tx.fmt.duration(max(data.data_age, timedelta(0)).total_seconds())
    st.caption(tx("page.data_age", as_of=tx.fmt.moment(data.data_as_of), age=age, zone=tx.zone))


def _metrics(data: OverviewData, tx: Texts) -> None:
    """Six cards; a card's value is short enough to fit it (34.1k, 3.41万), the exact figure in its help."""
    m = frames.metrics(data)
    q = tx.fmt.quantity
    cols = st.columns(6)
    cols[0].metric(tx("metric.gpu_hours"), tx.fmt.compact(m.gpu_hours),
                   help=tx("metric.exact", value=q(Quantity(m.gpu_hours, "gpu_hours"))))
    cols[1].metric(tx("metric.allocation"), q(Quantity(m.allocation, "percent")), help=tx("metric.allocation_help"))
    cols[2].metric(tx("metric.sla_missed"), tx("metric.sla_missed_value", missed=m.missed, judged=m.judged))
    cols[3].metric(tx("metric.idle"), tx.fmt.compact(m.idle_hours),
                   help=tx("metric.idle_help") + " " + tx("metric.exact", value=q(Quantity(m.idle_hours, "gpu_hours"))))
    cols[4].metric(tx("metric.alerts"), str(m.firing))
    cols[5].metric(tx("metric.telemetry"), q(Quantity(m.telemetry, "percent")))


def _usage(data: OverviewData, tx: Texts) -> None:
    st.subheader(tx("usage.header"))
    frame = frames.usage_by_scenario(data, tx)
    if frame is None:
        _not_available(tx, "usage")
        return
    x, y = tx("usage.x"), tx("usage.y")
    st.bar_chart(frame, x=x, y=y, x_label=x, y_label=y, sort=f"-{y}")


def _idle(data: OverviewData, tx: Texts) -> None:
    st.subheader(tx("idle.header"))
    found = frames.idle_by_team(data, tx)
    if found is None:
        _not_available(tx, "idle_by_job")
        return
    frame, no_data_hours = found
    x = tx("idle.x")
    st.bar_chart(frame, x=x, y=[tx("idle.idle"), tx("idle.held")], x_label=x, y_label=tx("idle.y"), stack=True)
    st.caption(tx("idle.no_data", hours=tx.fmt.quantity(Quantity(no_data_hours, "gpu_hours"))))


def _sla(data: OverviewData, tx: Texts) -> None:
    """The misses named in a sentence, then the missed and at-risk results whole; every result folded below."""
    st.subheader(tx("sla.header"))
    table = frames.sla_table(data, tx)
    if table is None:
        _not_available(tx, "sla_results")
        return
    status, subject, indicator = tx("col.status"), tx("col.subject"), tx("col.indicator")
    misses = table.filter(pl.col(status) == tx("sla.status.missed"))
    if misses.is_empty():
        st.success(tx("sla.all_met"))
    else:
        names = [tx("sla.miss_item", subject=s, indicator=i)
                 for s, i in zip(misses[subject], misses[indicator], strict=True)]
        st.warning(tx("sla.misses", count=misses.height, subjects=tx("list.join").join(names)))
    attention = table.filter(pl.col(status).is_in([tx("sla.status.missed"), tx("sla.status.at_risk")]))
    if not attention.is_empty():
        show_wrapped(attention, tx)
    judged = table.filter(pl.col(status) != tx("sla.status.none")).height
    with fold(tx("sla.all_results", count=table.height, judged=judged), "overview.sla") as unfolded:
        if unfolded:
            show_table(table, tx)


def _breaches(data: OverviewData, tx: Texts) -> None:
    st.subheader(tx("breaches.header"))
    st.markdown(f"**{tx('breaches.firing')}**")
    firing = frames.firing_table(data, tx)
    if firing is None:
        st.success(tx("breaches.no_firing"))
    else:
        show_table(firing, tx)
    st.markdown(f"**{tx('breaches.episodes')}**")
    if frames.usable(data, "episodes") is None:
        _not_available(tx, "breach_episodes")
        return
    episodes = frames.episodes_table(data, tx)
    if episodes is not None:
        with fold(tx("breaches.episodes_folded", count=episodes.height), "overview.episodes") as unfolded:
            if unfolded:
                show_table(episodes, tx)
    elif frames.completeness_table(data, tx) is None:
        st.info(tx("breaches.no_telemetry"))
    else:
        st.success(tx("breaches.none"))


def _completeness(data: OverviewData, tx: Texts) -> None:
    st.subheader(tx("completeness.header"))
    table = frames.completeness_table(data, tx)
    if table is None:
        _not_available(tx, "completeness")
        return
    st.caption(tx("completeness.honest"))
    show_table(table, tx)


def _status(data: OverviewData, tx: Texts) -> None:
    table = frames.status_table(data, tx)
    if table is None:
        return
    with fold(tx("status.header"), "overview.status") as unfolded:
        if unfolded:
            show_table(table, tx)


def render_overview(data: OverviewData, lang: Lang, charts: Callable[[], None] | None = None) -> None:
    """Draw the overview of one month in `lang` ("en" or "zh"); `charts`, when given, draws the series
    charts between the headline cards and the tables."""
    tx = Texts(lang, data.zone)
    st.title(tx("page.title", month=tx.fmt.month(data.month)))
    _data_age(data, tx)
    _metrics(data, tx)
    if charts is not None:
        charts()
    left, right = st.columns(2)
    with left:
        _usage(data, tx)
    with right:
        _idle(data, tx)
    _sla(data, tx)
    _breaches(data, tx)
    _completeness(data, tx)
    _status(data, tx)
