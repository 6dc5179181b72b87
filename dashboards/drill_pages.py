"""The GPU heatmap and the drill-down pages: team -> its jobs -> one job. Each page's filters are in its URL
(gpusteward/links.py names them; dashboards/urlstate.py reads and writes them)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date, timedelta
from typing import Any

import polars as pl
import streamlit as st

from dashboards import drill_frames as df
from dashboards import heatmap as hm
from dashboards import job_page, urlstate
from dashboards import jobs as job_frames
from dashboards.alert_links import SCREENS
from dashboards.pages import header
from dashboards.tables import show_table
from dashboards.view import View, choices
from gpusteward import links
from reports.model import Quantity

_FOCUS_SORT = {"idle": "idle", "wait": "wait", "failed": "outcome", "preempted": "gpu_hours", "all": "gpu_hours"}


def _month_days(view: View) -> list[str]:
    """Days of the month (pool's zone) with GPU buckets, newest first."""
    month = df.zoned_month(view)
    start = month.start.date()
    end = (month.end - timedelta(microseconds=1)).date()
    days = hm.local_days(view.model.gpu_days(), view.tx.zone)
    return [d.isoformat() for d in reversed(days) if start <= d <= end]


def _pick_cluster(view: View, clusters: list[str]) -> str:
    """The heatmap's cluster: the sidebar's cluster filter when set; choosing another sets that filter (when
    the sidebar offers it: a cluster only telemetry names may be missing there)."""
    state = st.session_state
    offered = set(choices(view.model.month_outputs(view.month), view.config)[0])
    wanted = [c for c in view.filters.clusters if c in clusters]
    if wanted and state.get("hm_cluster") not in wanted:
        state["hm_cluster"] = wanted[0]
    if state.get("hm_cluster") not in clusters:
        state["hm_cluster"] = clusters[0]

    def follow() -> None:
        picked = st.session_state["hm_cluster"]
        st.session_state["f_clusters"] = [picked] if picked in offered else []

    return str(st.selectbox(view.tx("col.cluster"), clusters, key="hm_cluster", on_change=follow))


def heatmap(view: View) -> None:
    header(view, "heatmap.title")
    tx = view.tx
    st.caption(tx("heatmap.help"))
    inventory = view.model.gpu_inventory()
    clusters = sorted(set(inventory["cluster"].to_list()))
    days = _month_days(view)
    if not clusters or not days:
        st.info(tx("common.not_available", reason=tx("heatmap.none")))
        return
    left, right = st.columns(2)
    with left:
        cluster = _pick_cluster(view, clusters)
    with right:
        urlstate.seed_one(st.session_state, st.query_params, links.DAY, "hm_day", days)
        day = str(st.selectbox(tx("heatmap.day"), days, key="hm_day"))
    urlstate.write(st.session_state, st.query_params, {links.DAY: [day]})
    frame = _cached_cells(view.model.version, view.model.published_at.isoformat(), cluster, day, tx.zone, view)
    mean, gpus, measured, missing = hm.summary(frame)
    a, b, c = st.columns(3)
    a.metric(tx("heatmap.gpus"), hm.amount(tx, gpus, 2))
    b.metric(tx("heatmap.mean"), tx.fmt.quantity(Quantity(mean, "percent")))
    c.metric(tx("heatmap.cells_no_data"), tx("heatmap.cells_value", missing=hm.amount(tx, missing, 1),
                                               total=hm.amount(tx, measured + missing, 1)))
    blocks = hm.blocks(frame)
    if len(blocks) > 1:  # the cards above count the whole cluster; the chart draws a block of its GPUs
        total = blocks[-1][1]
        block = st.selectbox(tx("heatmap.rows"), range(len(blocks)), key="hm_rows", format_func=lambda b: tx(
            "heatmap.rows_value", first=blocks[b][0], last=blocks[b][1], total=total))
        frame = hm.block_of(frame, int(block or 0))
    st.altair_chart(hm.chart(frame, tx), width="stretch")


@st.cache_data(ttl=60, max_entries=16, show_spinner=False)
def _cached_cells(version: str, published: str, cluster: str, day: str, zone: str, _view: View) -> pl.DataFrame:
    """One cluster's day of heatmap cells from one published version, computed once for every viewer and rerun
    (a language switch, another page and back): reading the day's buckets and merging them into hours took
    0.4-1 s of the server's CPU for 1,000 GPUs."""
    del version, published
    lo, hi = hm.day_bounds(date.fromisoformat(day), zone)
    buckets = _view.model.gpu_buckets(lo, hi, cluster=cluster)
    return hm.cells(_view.model.gpu_inventory(), buckets, cluster, date.fromisoformat(day), zone)


@st.cache_data(ttl=60, max_entries=8, show_spinner=False)
def _month_rows(version: str, published: str, month: str, rules: str, _view: View) -> pl.DataFrame:
    """The month's jobs of one published version, computed once for every viewer and rerun (the key is the
    version, its publication time, the month and the rules that give jobs their teams)."""
    del version, published, month, rules
    return df.all_month_jobs(_view)


def _cached_jobs(view: View) -> pl.DataFrame:
    config = view.config
    return _month_rows(view.model.version, view.model.published_at.isoformat(), str(view.month),
                       repr((config.rules, sorted(config.teams.items()), config.timezone)), view)


def _jobs_choice(view: View, key: str, param: str, options: tuple[str, ...], *, default: str, label: str) -> str:
    state = st.session_state
    if state.get(key) not in options:
        state[key] = default
    urlstate.seed_one(state, st.query_params, param, key, options)
    return str(st.selectbox(label, options, key=key, format_func=lambda o: view.tx(f"{key}.{o}")))


def jobs(view: View) -> None:
    header(view, "jobs.title")
    tx = view.tx
    rows = df.month_jobs(view, _cached_jobs(view))
    st.caption(tx("jobs.help"))
    st.subheader(tx("jobs.teams"))
    teams = df.team_table(rows, view)
    if teams is None:
        st.info(tx("common.not_available", reason=tx("common.no_rows", what=tx.fmt.term("source", "jobs"))))
        return
    show_table(teams, tx)
    st.subheader(tx("jobs.list"))
    left, right = st.columns(2)
    with left:
        focus = _jobs_choice(view, "jobs_focus", links.FOCUS, links.FOCI, default="all", label=tx("jobs.focus"))
    with right:
        sort = _jobs_choice(view, "jobs_sort", links.SORT, links.SORTS, default=_FOCUS_SORT[focus],
                            label=tx("jobs.sort"))
    urlstate.write(st.session_state, st.query_params, {links.FOCUS: [focus] if focus != "all" else [],
                                                        links.SORT: [sort]})
    shown = job_frames.ordered(job_frames.focused(rows, focus), sort)
    table = df.job_table(shown, view)
    if table is None:
        st.info(tx("jobs.none"))
        return
    if shown.height > df.ROWS_SHOWN:
        st.caption(tx("jobs.truncated", shown=df.ROWS_SHOWN, total=shown.height))
    show_table(table, tx)
    keys = [f"{c}/{j}" for c, j in zip(shown["cluster"].head(df.ROWS_SHOWN).to_list(),
                                       shown["job_id"].head(df.ROWS_SHOWN).to_list(), strict=True)]
    labels = dict(zip(keys, shown["job"].head(df.ROWS_SHOWN).to_list(), strict=True))
    chosen = st.selectbox(tx("jobs.open"), keys, key="jobs_open",
                          format_func=lambda k: f"{k.split('/')[0]}/{labels.get(k, k)}")
    if chosen:
        cluster, _, job_id = str(chosen).partition("/")
        target = links.job(str(view.month), cluster, job_id)
        st.page_link(str(SCREENS / "job.py"), label=tx("jobs.open_link", job=labels.get(str(chosen), job_id)),
                     query_params=target.query())


def _pick_choice(key: str, options: list[Any], *, label: str, format_func: Callable[[Any], str],
                 on_change: Callable[[], None]) -> Any:
    if st.session_state.get(key) not in options:
        st.session_state[key] = options[0]
    return st.selectbox(label, options, key=key, format_func=format_func, on_change=on_change)


def _refilter() -> None:
    """A filter changed: the picker's first job is shown (`job`)."""
    st.session_state[_REFILTER] = True


def _typed() -> None:
    """A job id was typed: `job` looks it up (its own widget's value, kept to show what was asked)."""
    st.session_state[_TYPED] = st.session_state.get("job_find", "")


_REFILTER, _TYPED = "_job_refilter", "_job_typed"


def job(view: View) -> None:
    """One job, picked from a bounded list (filters, then the first N by a sort) or by its id; a link from the
    jobs page, the review or an alert opens it by the `job` parameter. Only the N listed jobs reach the browser."""
    tx = view.tx
    rows = df.month_jobs(view, _cached_jobs(view))
    state = st.session_state
    header(view, "job.title_month")
    if rows.is_empty():
        st.info(tx("jobs.none"))
        return
    st.caption(tx("job.find_help"))
    top, matched, sort = _job_filters(view, rows)
    listed = [job_frames.key_of(c, j) for c, j in zip(top["cluster"].to_list(), top["job_id"].to_list(), strict=True)]
    labels = dict(zip(listed, top["job"].to_list(), strict=True))
    st.text_input(tx("job.find"), key="job_find", placeholder=tx("job.find_placeholder"), on_change=_typed)
    _go_to_asked(view, rows, listed)
    current = state.get("job_pick")
    options = listed
    if isinstance(current, str) and current not in listed and job_frames.found(rows, current):
        options = [current, *listed]  # the job shown stays first, whatever the filters list
        labels |= _labels(rows, [current])
    if not options:
        st.info(tx("jobs.none"))
        urlstate.write(state, st.query_params, {links.JOB_KEY: []})
        return
    if state.get("job_pick") not in options:
        state["job_pick"] = options[0]
    st.caption(tx("job.listed", shown=tx.fmt.number(len(listed)), total=tx.fmt.number(matched),
                  sort=tx(f"job_sort.{sort}")))
    chosen = str(st.selectbox(tx("job.pick"), options, key="job_pick",
                              format_func=lambda k: f"{k.split('/')[0]}/{labels.get(k, k)}"))
    urlstate.write(state, st.query_params, {links.JOB_KEY: [chosen]})
    parsed = links.parse_job_key(chosen)
    if parsed is None:
        return
    _job_body(view, rows, *parsed)


def _job_filters(view: View, rows: pl.DataFrame) -> tuple[pl.DataFrame, int, str]:
    """The picker's filters (account, outcome), its sort and length: the jobs it lists, how many matched, the sort."""
    tx = view.tx
    accounts = [None, *sorted(rows["account"].drop_nulls().unique().to_list())]
    states = [None, *sorted(rows["state"].drop_nulls().unique().to_list())]
    columns = st.columns(4)
    with columns[0]:
        account = _pick_choice("job_account", accounts, label=tx("job.account"), on_change=_refilter,
                               format_func=lambda a: tx("job.any_account") if a is None else str(a))
    with columns[1]:
        outcome = _pick_choice("job_state", states, label=tx("jobs.col.outcome"), on_change=_refilter,
                               format_func=lambda s: tx("job.any_outcome") if s is None else df.state_text(tx, s))
    with columns[2]:
        sort = str(_pick_choice("job_sort", list(job_frames.PICK_SORTS), label=tx("jobs.sort"), on_change=_refilter,
                                format_func=lambda o: tx(f"job_sort.{o}")))
    with columns[3]:
        limit = _pick_choice("job_top", list(job_frames.PICK_SIZES), label=tx("job.top"), on_change=_refilter,
                             format_func=str)
    top, matched = job_frames.picked(rows, account=account, state=outcome, sort=sort, limit=int(limit))
    return top, matched, sort


def _go_to_asked(view: View, rows: pl.DataFrame, listed: list[str]) -> None:
    """Pick the job a link (the `job` parameter) or the id box asked for, warning when the view has none such;
    after a filter changed, the first job listed."""
    tx, state = view.tx, st.session_state
    asked = urlstate.incoming(state, st.query_params, links.JOB_KEY)
    typed = state.pop(_TYPED, None)
    wanted = asked[0] if asked else str(typed).strip() if typed else None
    refiltered = state.pop(_REFILTER, False)
    if wanted:
        exists = job_frames.found(rows, wanted)
        if not exists:
            st.warning(tx("job.not_found", job=wanted))
            return
        state["job_pick"] = exists[0]
        if len(exists) > 1:  # clusters that number their jobs alike
            st.caption(tx("job.found_many", jobs=", ".join(exists)))
    elif refiltered and listed:
        state["job_pick"] = listed[0]


def _labels(rows: pl.DataFrame, keys: list[str]) -> dict[str, str]:
    """The sacct label (123_4 for an array task) of each of `keys` in `rows`."""
    out = {}
    for key in keys:
        parsed = links.parse_job_key(key)
        if parsed is not None:
            hit = rows.filter((pl.col("cluster") == parsed[0]) & (pl.col("job_id") == parsed[1]))
            out[key] = str(hit["job"][0]) if hit.height else key.split("/", 1)[1]
    return out


def _timeline(view: View, records: pl.DataFrame, cluster: str, job_id: int) -> None:
    """The job's GPUs over time, from the buckets its id labels; "not available" without any."""
    tx = view.tx
    window = job_frames.window(df.zoned_month(view), view.model.status())
    span = job_page.span(records, window.end)
    if span is None:
        st.info(tx("common.not_available", reason=tx("job.no_telemetry")))
        return
    lo, hi = span
    frame = job_page.timeline(view.model.gpu_buckets(lo, hi, cluster=cluster, job_id=str(job_id)), lo, hi, tx.zone)
    if frame.is_empty():
        st.info(tx("common.not_available", reason=tx("job.no_telemetry")))
        return
    minutes = job_page.STEP_MINUTES[job_page.step_for(lo, hi)]
    st.caption(tx("job.timeline_help", step=tx.fmt.duration(minutes * 60.0)))
    st.altair_chart(job_page.chart(frame, tx), width="stretch")


def _job_body(view: View, rows: pl.DataFrame, cluster: str, job_id: int) -> None:
    tx = view.tx
    row = rows.filter((pl.col("cluster") == cluster) & (pl.col("job_id") == job_id)).row(0, named=True)
    st.subheader(tx("job.title", job=row["job"], cluster=cluster, name=row["name"] or "—"))
    st.caption(tx("job.who", user=row["user"] or "—", team=view.team_name(row["team"]),
                  scenario=tx.fmt.term("scenario", row["scenario"]), queue=row["queue"]))
    cols = [*st.columns(3), *st.columns(3)]  # two rows: six cards in one would cut their values
    cols[0].metric(tx("jobs.col.gpu_hours"), tx.fmt.quantity(Quantity(row["gpu_hours"], "gpu_hours")))
    cols[1].metric(tx("jobs.col.wait"), df.wait_text(tx, row["wait_s"], row["first_start"]))
    cols[2].metric(tx("jobs.col.outcome"), df.state_text(tx, row["state"]))
    cols[3].metric(tx("jobs.col.exit"), df.exit_text(tx, row["exit_code"], row["exit_signal"]))
    cols[4].metric(tx("jobs.col.preemptions"), row["preemptions"])
    cols[5].metric(tx("jobs.col.idle_share"), tx.fmt.quantity(Quantity(row["idle_share"], "percent")))
    records = view.model.job_records(view.month).filter((pl.col("cluster") == cluster) & (pl.col("job_id") == job_id))
    st.markdown(f"**{tx('job.records')}**")
    show_table(df.records_table(records, view), tx)
    st.markdown(f"**{tx('job.timeline')}**")
    _timeline(view, records, cluster, job_id)
    st.markdown(f"**{tx('job.ledger')}**")
    ledger = df.ledger_table(job_page.job_ledger(view.outputs.ledger, cluster, job_id), view, job_id)
    if ledger is None:
        st.caption(tx("job.ledger_none"))
    else:
        show_table(ledger, tx)
    if row["team"]:
        back = links.team_jobs(str(view.month), str(row["team"]))
        st.page_link(str(SCREENS / "jobs.py"), label=tx("job.back", team=view.team_name(row["team"])),
                     query_params=back.query())
