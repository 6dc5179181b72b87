"""Page bodies. Each takes the View built by app.py; none runs SQL or touches the warehouse file."""

from __future__ import annotations

import json
from datetime import timedelta

import httpx
import polars as pl
import streamlit as st

from dashboards import alert_links
from dashboards import page_frames as pf
from dashboards.folds import fold
from dashboards.frames import AT_RISK_BUDGET, AT_RISK_MARGIN
from dashboards.inference_capacity import capacity_table
from dashboards.overview import render_overview
from dashboards.page_charts import (
    allocation_section,
    idle_section,
    inference_section,
    preemption_section,
    queue_wait_section,
)
from dashboards.review_sections import parts as review_parts
from dashboards.tables import show_table, show_wrapped
from dashboards.texts import Texts
from dashboards.view import View
from reports import build_review, render_markdown

API_TIMEOUT_S = 30.0


def _table(frame: pl.DataFrame | None, view: View, source: str) -> None:
    if frame is None or frame.is_empty():
        tx = view.tx
        st.info(tx("common.not_available", reason=tx("common.no_rows", what=tx.fmt.term("source", source))))
        return
    show_table(frame, view.tx)


def header(view: View, key: str) -> None:
    """Title, scope and the data's age: on every page."""
    tx = view.tx
    st.title(tx(key, month=tx.fmt.month(view.month)))
    as_of, age = view.data_as_of(), view.data_age()
    published = tx.fmt.moment(view.model.published_at)
    if as_of is None or age is None:
        st.caption(tx("page.data_age_unknown") + " " + tx("page.published", at=published, zone=tx.zone))
    else:
        st.caption(tx("page.data_age", as_of=tx.fmt.moment(as_of), age=tx.fmt.duration(
            max(age, timedelta(0)).total_seconds()), zone=tx.zone) + " " + tx("page.published", at=published,
                                                                              zone=tx.zone))
    if view.team_scope:
        st.caption(tx("page.team_scope", team=view.team_name(view.team_scope)))


def overview(view: View) -> None:
    st.caption(view.tx("page.published", at=view.tx.fmt.moment(view.model.published_at), zone=view.tx.zone))
    render_overview(view.overview(), view.lang, charts=lambda: allocation_section(view))
    if view.team_scope:
        st.caption(view.tx("page.team_scope", team=view.team_name(view.team_scope)))


def scenarios(view: View) -> None:
    """The summary per scenario; under each scenario its missed and at-risk results whole, every result folded."""
    header(view, "scenarios.title")
    tx = view.tx
    _table(pf.scenario_summary(view), view, "sla_results")
    results = view.outputs.results
    for scenario in sorted(set(results["scenario"].drop_nulls().to_list())):
        rows = results.filter(pl.col("scenario") == scenario)
        st.subheader(tx.fmt.term("scenario", scenario))
        attention = pf.results_table(view, pf.needing_attention(rows), keep_order=True)
        if attention is not None:
            show_wrapped(attention, tx)
        judged = rows.filter(pl.col("met").is_not_null()).height
        with fold(tx("scenarios.all_results", count=rows.height, judged=judged), f"scenarios.{scenario}") as unfolded:
            if unfolded:
                _table(pf.results_table(view, rows), view, "sla_results")


def queues(view: View) -> None:
    header(view, "queues.title")
    tx = view.tx
    queue_wait_section(view)
    st.subheader(tx("queues.wait"))
    _queue_objectives(view)
    st.subheader(tx("queues.arrays"))
    st.caption(tx("queues.arrays_help"))
    arrays = pf.arrays_table(view)
    if arrays is None:
        _table(None, view, "month_arrays")
    else:
        with fold(tx("queues.arrays_folded", count=arrays.height), "queues.arrays") as unfolded:
            if unfolded:
                show_table(arrays, tx)
    st.subheader(tx("queues.share"))
    _table(pf.share_table(view), view, "usage")
    st.subheader(tx("queues.fairness"))
    _table(pf.results_table(view, view.outputs.results.filter(pl.col("subject_kind") == "team"),
                            subject_label="col.team"), view, "sla_results")
    st.subheader(tx("queues.quota_history"))
    _table(pf.quota_history(view), view, "quota_plan_items")


def _queue_objectives(view: View) -> None:
    """The missed and at-risk queue objectives first; every queue result folded below them."""
    tx = view.tx
    results = view.outputs.results.filter(pl.col("subject_kind") == "queue")
    judged = results.filter(pl.col("met").is_not_null()).height
    st.markdown(f"**{tx('queues.attention')}**")
    st.caption(tx("queues.attention_help", budget=tx.fmt.percent(AT_RISK_BUDGET),
                  margin=tx.fmt.percent(AT_RISK_MARGIN)))
    attention = pf.needing_attention(results)
    table = pf.results_table(view, attention, subject_label="col.queue", keep_order=True)
    if table is not None:
        show_wrapped(table, tx)  # a handful of rows, each evidence read whole
    elif judged:
        st.success(tx("queues.attention_none", judged=judged))
    else:
        _table(None, view, "sla_results")
    with fold(tx("queues.all_results", count=results.height, judged=judged), "queues.all_results") as unfolded:
        if unfolded:
            _table(pf.results_table(view, results, subject_label="col.queue"), view, "sla_results")


def inference(view: View) -> None:
    """The services' latency chart; their missed and at-risk results whole, every result folded below; then
    each service's replicas, GPUs serving and capacity headroom (dashboards/inference_capacity.py)."""
    header(view, "inference.title")
    tx = view.tx
    inference_section(view)
    st.caption(tx("inference.headroom_help"))
    table = pf.services_table(view)
    if table is None:
        _table(None, view, "sla_results")
        return
    words = pl.col(tx("col.status"))
    attention = table.filter(words.is_in([tx("sla.status.missed"), tx("sla.status.at_risk")]))
    if attention.is_empty():
        st.success(tx("inference.attention_none"))
    else:
        show_wrapped(attention.sort(words != tx("sla.status.missed"), maintain_order=True), tx)
    with fold(tx("inference.all_results", count=table.height), "inference.all_results") as unfolded:
        if unfolded:
            show_table(table, tx)
    capacity = capacity_table(view)
    if capacity is not None:
        st.subheader(tx("inference.capacity"))
        st.caption(tx("inference.capacity_help"))
        show_table(capacity, tx)


def idle(view: View) -> None:
    header(view, "idle_page.title")
    tx = view.tx
    st.caption(tx("completeness.honest"))
    idle_section(view)
    teams = pf.idle_teams(view)
    if teams is not None:
        x = tx("col.team")
        st.bar_chart(teams, x=x, y=[tx("col.idle"), tx("col.idle_held"), tx("col.no_data")], x_label=x,
                     y_label=tx("idle.y"), stack=True)
    _table(teams, view, "idle_by_job")
    st.subheader(tx("idle_page.jobs"))
    _table(pf.idle_jobs(view), view, "idle_by_job")
    reclaim_pending(view)


def reclaim_pending(view: View) -> None:
    """The reclaim warnings and actions still pending, with approve/reject for those waiting for a person."""
    tx = view.tx
    st.subheader(tx("idle_page.reclaim"))
    table = pf.reclaim_pending_table(view)
    if table is None:
        st.caption(tx("idle_page.reclaim_none"))
        return
    st.caption(tx("idle_page.reclaim_help"))
    show_table(table, tx)
    waiting = view.model.reclaim_pending().filter(pl.col("state") == "awaiting_approval")["decision_id"].to_list()
    if not waiting or not _can_act(view):
        return
    chosen = st.selectbox(tx("reclaim.choose"), waiting, key="reclaim_choice")
    reason = st.text_input(tx("control.reason"), key="reclaim_reason")
    left, right = st.columns(2)
    if left.button(tx("reclaim.approve"), key="reclaim_approve", type="primary"):
        _report(view, *_post(view, f"/api/v1/reclaim/actions/{chosen}/approve", {"reason": reason or None}))
    if right.button(tx("reclaim.reject"), key="reclaim_reject"):
        _report(view, *_post(view, f"/api/v1/reclaim/actions/{chosen}/reject", {"reason": reason or None}))


def preemption(view: View) -> None:
    header(view, "preemption.title")
    preemption_section(view)


REVIEW_OPEN_PARTS = 3  # the title and period, what needs a decision, the task mix; the rest folded


def review(view: View) -> None:
    header(view, "review.title")
    if view.filters.clusters or view.filters.teams or view.filters.scenarios:
        st.caption(view.tx("review.filtered"))
    text = render_markdown(build_review(view.model.month_outputs(view.month), view.config), view.lang)
    with st.container(border=True):
        for number, part in enumerate(review_parts(text)):
            if number < REVIEW_OPEN_PARTS:
                st.markdown(f"## {part.title}\n\n{part.body}" if part.title else part.body)
                continue
            with fold(part.title, f"review.{part.title}") as unfolded:
                if unfolded:
                    st.markdown(part.body)


def _post(view: View, path: str, body: dict[str, object]) -> tuple[int, str]:
    if not view.api_url or not view.can_call_api:
        return 0, view.tx("control.unconfigured")
    token = {"Authorization": f"Bearer {view.api_token}"} if view.api_token else {}
    try:
        response = httpx.post(view.api_url.rstrip("/") + path, json=body, timeout=API_TIMEOUT_S,
                              headers={**token, **view.on_behalf})
    except httpx.HTTPError as exc:
        return 0, str(exc)
    return response.status_code, response.text


REFUSALS = (400, 401, 403, 404, 408, 409, 413, 503)  # the control API's documented refusals (its OpenAPI document)


def refusal_text(tx: Texts, status: int, text: str) -> str:
    """What a refusal means, in the viewer's language, then the service's own words (its `error` field)."""
    try:
        answer = json.loads(text)
        detail = str(answer.get("error") or text) if isinstance(answer, dict) else text
    except ValueError:
        detail = text
    meaning = tx(f"control.refused.{status}") if status in REFUSALS else tx("control.refused.other")
    return tx("control.failed", status=status or "—", meaning=meaning, error=detail[:300])


def _report(view: View, status: int, text: str) -> None:
    tx = view.tx
    if 200 <= status < 300:
        st.success(tx("control.done"))
        st.cache_resource.clear()
    else:
        st.warning(refusal_text(tx, status, text))


def _can_act(view: View) -> bool:
    if view.team_scope:
        st.caption(view.tx("control.team_read_only"))
        return False
    if not view.can_call_api:
        st.caption(view.tx("control.unconfigured"))
        return False
    return True


def plans(view: View) -> None:
    header(view, "plans.title")
    tx = view.tx
    st.caption(tx("plans.dry_run"))
    table = pf.plans_table(view)
    _table(table, view, "quota_plan_items")
    if table is None:
        return
    ids = table[tx("col.plan")].to_list()
    chosen = st.selectbox(tx("plans.choose"), ids, key="plan_choice")
    items = pf.plan_items_table(view, str(chosen))
    if items is None:
        _table(None, view, "quota_plan_items")
    else:
        show_wrapped(items, tx)  # a reason is a sentence or two: a grid would cut it off
    if not _can_act(view):
        return
    reason = st.text_input(tx("control.reason"), key="plan_reason")
    override = st.text_input(tx("plans.override"), key="plan_override")
    left, right = st.columns(2)
    if left.button(tx("plans.approve"), key="approve", type="primary"):
        body: dict[str, object] = {"reason": reason or None, **({"override": override} if override else {})}
        _report(view, *_post(view, f"/api/v1/plans/{chosen}/approve", body))
    if right.button(tx("plans.reject"), key="reject"):
        _report(view, *_post(view, f"/api/v1/plans/{chosen}/reject", {"reason": reason or None}))


def alerts(view: View) -> None:
    """The alerts firing now lead, as in Alertmanager's own view; the month's resolved ones follow, counted by
    line, each of them in a fold built only when unfolded (on the demo month 66 rows: a grid every open drew)."""
    header(view, "alerts.title")
    tx = view.tx
    if view.alerts().is_empty():
        _table(None, view, "alerts")
        return
    firing, resolved = pf.latest_alerts(view)
    st.subheader(tx("alerts.firing"))
    firing_table = pf.alerts_table(view, firing)
    if firing_table is None:
        st.caption(tx("alerts.none_firing"))
    else:
        show_table(firing_table, tx)
    summary = pf.resolved_summary(view, resolved)
    if summary is not None:
        st.subheader(tx("alerts.resolved_title"))
        show_table(summary, tx)
        with fold(tx("alerts.resolved", count=tx.fmt.number(resolved.height)), "alerts_resolved") as unfolded:
            resolved_table = pf.alerts_table(view, resolved) if unfolded else None
            if resolved_table is not None:
                show_table(resolved_table, tx)
    alert_links.show(view, pl.concat([firing, resolved]))
    if not _can_act(view):
        return
    fingerprints = view.alerts()["fingerprint"].unique(maintain_order=True).to_list()
    chosen = st.selectbox(tx("alerts.choose"), fingerprints, key="alert_choice", format_func=lambda f: str(f)[:12])
    minutes = st.number_input(tx("alerts.minutes"), min_value=5, max_value=44640, value=120, step=5, key="minutes")
    reason = st.text_input(tx("control.reason"), key="alert_reason")
    left, right = st.columns(2)
    if left.button(tx("alerts.silence"), key="silence"):
        _report(view, *_post(view, f"/api/v1/alerts/{chosen}/silence", {"minutes": int(minutes),
                                                                         "reason": reason or None}))
    if right.button(tx("alerts.acknowledge"), key="acknowledge"):
        _report(view, *_post(view, f"/api/v1/alerts/{chosen}/acknowledge", {"reason": reason or None}))
