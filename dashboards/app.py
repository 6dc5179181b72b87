"""Streamlit entry point.

    streamlit run dashboards/app.py -- --read-model DIR --config FILE [--api URL] [--user-header NAME]
                                       [--groups-header NAME] [--team-header NAME]
    streamlit run dashboards/app.py -- --db FILE --config FILE          (no service running: read-only file)

`--now 2026-10-03T12:00:00+00:00` shows the data's age as of that moment instead of the wall clock, so two
renderings of the same read model are identical (the browser test's reference screenshots, the docs' images).

Reads the read model the service publishes (Parquet, no lock on the live warehouse); nobody types
SQL here. The control actions (approve a plan, silence an alert) go through the service's API with
the token in $GPUSTEWARD_DASHBOARD_TOKEN (or --api-token-env), on behalf of the viewer the sign-in
proxy names (--user-header), so the audit names the person (dashboards/identity.py).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any


def _product_packages_first() -> None:
    """Put the folder holding the product's packages first on sys.path, and drop this script's own folder.

    Streamlit puts the script's folder on sys.path, and `python -m streamlit` the working folder. Run from
    a folder holding `reports/`, `alerts/` or `warehouse/` (the demo's output), those folders would be
    imported instead of the product's packages of the same names (a folder without `__init__.py` becomes
    a namespace package when no regular one is found on sys.path first, and an editable install's finder
    is only asked after sys.path). Streamlit runs this script as `__main__` before the product's imports
    below, on every rerun; imported as `dashboards.app` (by the pages, by tests) it changes nothing.
    """
    here = Path(__file__).resolve().parent
    root = str(here.parent)
    sys.path[:] = [root, *(p for p in sys.path if p not in (root, str(here)))]


if __name__ == "__main__":
    _product_packages_first()

import streamlit as st  # noqa: E402

from dashboards import urlstate  # noqa: E402
from dashboards.identity import Refusal, SignIn, viewer_from_headers  # noqa: E402
from dashboards.texts import LANGUAGE_NAMES, Texts  # noqa: E402
from dashboards.view import Filters, Reader, View, choices, filter_outputs, naive_now  # noqa: E402
from gpusteward import links  # noqa: E402
from gpusteward.config import load_config  # noqa: E402
from gpusteward.config.schema import Config  # noqa: E402
from gpusteward.domain import Month  # noqa: E402
from reports.locale import LANGS, Lang  # noqa: E402

CACHE_TTL_S = 60
VIEW_KEY = "_gpusteward_view"
SCREENS = Path(__file__).parent / "screens"
PAGES = ("overview", "scenarios", "queues", "inference", "idle", "showback", "preemption", "review", "plans",
         "alerts")
# The GPU heatmap and the drill-down from a team to its jobs and to one job (dashboards/drill_pages.py). A
# comment, not a docstring: Streamlit runs this file as a page and would write a bare string on it.
DRILL_PAGES = ("heatmap", "jobs", "job")


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="dashboards/app.py", description="GPU Steward dashboards")
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--read-model", help="folder the service publishes the read model to")
    source.add_argument("--db", help="the warehouse's DuckDB file, opened read-only (only when no service writes it)")
    parser.add_argument("--config", default=None, help="the gpusteward.toml config (team names, pool size)")
    parser.add_argument("--month", default=None, type=Month.parse, help="month to open first, YYYY-MM")
    parser.add_argument("--now", default=None, type=_moment,
                        help="show the data's age as of this ISO 8601 moment with its zone instead of the wall clock "
                             "(reproducible screenshots and tests)")
    parser.add_argument("--api", default=None, help="the service's URL for control actions, e.g. http://127.0.0.1:9464")
    parser.add_argument("--api-token-env", default="GPUSTEWARD_DASHBOARD_TOKEN",
                        help="environment variable holding the control API token (never shown)")
    parser.add_argument("--team-header", default=None,
                        help="trust this request header (set by an authenticating proxy) as the viewer's team; "
                             "a request without it is refused")
    parser.add_argument("--user-header", default=None,
                        help="trust this request header (set by an authenticating proxy) as the viewer's identity, "
                             "forwarded to the control API so the audit names them; a request without it is refused")
    parser.add_argument("--groups-header", default=None,
                        help="the proxy's header with the viewer's groups, forwarded with --user-header")
    return parser.parse_args(list(argv))


def _moment(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise argparse.ArgumentTypeError(f"--now {text!r} has no time zone; write it like 2026-10-03T12:00:00+00:00")
    return moment


def current_view() -> View:
    """The View app.py built for this run; screens call it."""
    view = st.session_state.get(VIEW_KEY)
    if not isinstance(view, View):
        st.stop()
    return view


def _language() -> Lang:
    current = st.session_state.get("lang", "en")
    lang: Any = st.sidebar.radio(
        Texts(current if current in LANGS else "en")("sidebar.language"),
        LANGS,
        format_func=lambda code: LANGUAGE_NAMES[code],
        key="lang",
        horizontal=True,
    )
    return "zh" if lang == "zh" else "en"


def _month(model: Reader, tx: Texts, first: Month | None) -> Month | None:
    months = model.months()
    if not months:
        return None
    options = [str(m) for m in reversed(months)]
    urlstate.seed_one(st.session_state, st.query_params, links.MONTH, "month", options)
    if st.session_state.get("month") not in options:
        st.session_state["month"] = str(first) if first is not None and str(first) in options else options[0]
    return Month.parse(st.sidebar.selectbox(tx("sidebar.month"), options, key="month"))


def _filters(view_choices: tuple[list[str], list[str], list[str]], tx: Texts, config: Config,
             team_scope: str | None) -> Filters:
    clusters, teams, scenarios = view_choices
    names = {k: t.display_name or k for k, t in config.teams.items()}
    params = st.query_params
    urlstate.seed_many(st.session_state, params, links.CLUSTER, "f_clusters", clusters)
    urlstate.seed_many(st.session_state, params, links.SCENARIO, "f_scenarios", scenarios)
    if not team_scope:
        urlstate.seed_many(st.session_state, params, links.TEAM, "f_teams", teams)
    picked_clusters = st.sidebar.multiselect(tx("sidebar.cluster"), clusters, key="f_clusters",
                                             placeholder=tx("sidebar.all"))
    if team_scope:
        st.sidebar.caption(tx("page.team_scope", team=names.get(team_scope, team_scope)))
        picked_teams: list[str] = [team_scope]
    else:
        picked_teams = st.sidebar.multiselect(tx("sidebar.team"), teams, key="f_teams", placeholder=tx("sidebar.all"),
                                              format_func=lambda k: names.get(k, k))
    picked_scenarios = st.sidebar.multiselect(tx("sidebar.scenario"), scenarios, key="f_scenarios",
                                              placeholder=tx("sidebar.all"),
                                              format_func=lambda s: tx.fmt.term("scenario", s))
    return Filters(tuple(picked_clusters), tuple(picked_teams), tuple(picked_scenarios))


def run_app(
    open_model: Callable[[], Reader],
    config: Config,
    *,
    first_month: Month | None = None,
    api_url: str | None = None,
    api_token: str | None = None,
    team_header: str | None = None,
    user_header: str | None = None,
    groups_header: str | None = None,
    headers: Callable[[], Mapping[str, str]] | None = None,
    now: datetime | None = None,
) -> None:
    """Sidebar (language, period, filters), then the chosen page; a request the sign-in headers refuse
    gets an error and nothing else (dashboards/identity.py)."""
    lang = _language()
    tx = Texts(lang, config.timezone)
    sign_in = SignIn(user_header, groups_header, team_header)
    viewer = viewer_from_headers((headers or (lambda: st.context.headers))(), sign_in)
    if isinstance(viewer, Refusal):
        st.error(tx(viewer.key, **{k: tx(str(v)) if k == "what" else v for k, v in viewer.params.items()}))
        return
    if viewer.user:
        st.sidebar.caption(tx("page.signed_in", user=viewer.user))
    try:
        model = open_model()
    except (FileNotFoundError, ValueError) as exc:
        st.info(tx("page.no_model", error=str(exc)))
        return
    month = _month(model, tx, first_month)
    if month is None:
        st.info(tx("page.no_month", error=tx("page.nothing_evaluated")))
        return
    outputs = model.month_outputs(month)
    filters = _filters(choices(outputs, config), tx, config, viewer.team)
    urlstate.write(st.session_state, st.query_params, {
        links.MONTH: [str(month)], links.CLUSTER: filters.clusters,
        links.TEAM: filters.teams if not viewer.team else (), links.SCENARIO: filters.scenarios,
    })
    st.session_state[VIEW_KEY] = View(model, month, filter_outputs(outputs, filters), filters, lang, config,
                                      naive_now(now), viewer.team, api_url, api_token, viewer.forwarded(sign_in))
    # Every link shown (`expanded=True`): a collapsed menu ends in Streamlit's own "View 3 more", which no
    # catalogue translates. The two sections' headers come from the catalogues.
    nav = st.navigation({
        tx(section): [st.Page(str(SCREENS / f"{name}.py"), title=tx(f"nav.{name}"), url_path=name,
                              default=name == "overview") for name in names]
        for section, names in (("nav.section.month", PAGES), ("nav.section.drill", DRILL_PAGES))
    }, expanded=True)
    nav.run()


@st.cache_resource(show_spinner=False, max_entries=2)
def _read_model(root: str, version: str | None) -> Reader:
    """The published version, loaded once and shared by every session until a newer one is published. No
    time limit: a version never changes once named, and reloading it (7-9 s of the first page open on the
    demo month, docs/performance.md) made whichever reader came after the limit wait for it."""
    from warehouse.readmodel import load_read_model

    del version  # part of the cache key: a new version is loaded once, then shared by every session
    return load_read_model(root)


@st.cache_resource(ttl=CACHE_TTL_S, show_spinner=False, max_entries=2)
def _from_db(db: str, config_file: str | None) -> Reader:
    """A snapshot of the file, its series in the config's zone and classified by its rules."""
    from warehouse import open_warehouse
    from warehouse.readmodel import materialized, snapshot

    with open_warehouse(db, read_only=True) as wh:
        return materialized(snapshot(wh, config=load_config(config_file) if config_file else Config()))


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    st.set_page_config(page_title="GPU Steward", layout="wide")
    config = load_config(args.config) if args.config else Config()
    if args.read_model:
        from warehouse.readmodel import current_version

        def open_model() -> Reader:
            return _read_model(args.read_model, current_version(args.read_model))
    else:

        def open_model() -> Reader:
            return _from_db(args.db, args.config)

    run_app(open_model, config, first_month=args.month, api_url=args.api,
            api_token=os.environ.get(args.api_token_env) or None, team_header=args.team_header,
            user_header=args.user_header, groups_header=args.groups_header, now=args.now)


if __name__ == "__main__":
    main()
