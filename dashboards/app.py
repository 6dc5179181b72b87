"""Streamlit entry point: `streamlit run dashboards/app.py -- --db PATH --config PATH [--month YYYY-MM]`.

Reads the warehouse read-only through `warehouse` queries; nobody types SQL here.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from typing import Any

import streamlit as st

from dashboards.data import OverviewData, load_overview
from dashboards.overview import render_overview
from dashboards.texts import LANGUAGE_NAMES, Texts
from gpusteward.domain import Month
from reports.locale import LANGS, Lang

CACHE_TTL_S = 60
Loader = Callable[[Month | None], OverviewData]


def parse_args(argv: Sequence[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="dashboards/app.py", description="GPU Steward overview dashboard")
    parser.add_argument("--db", required=True, help="the warehouse's DuckDB file (opened read-only)")
    parser.add_argument("--config", default=None, help="the gpusteward.toml config (team names, pool size)")
    parser.add_argument("--month", default=None, type=Month.parse, help="month to open first, YYYY-MM")
    return parser.parse_args(list(argv))


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


def run_app(load: Loader, *, first_month: Month | None = None) -> None:
    """The page: language and month in the sidebar, the overview in the body. `load` reads one month."""
    lang = _language()
    tx = Texts(lang)
    chosen = st.session_state.get("month")
    try:
        data = load(Month.parse(chosen) if isinstance(chosen, str) else first_month)
    except Exception as exc:
        st.session_state.pop("month", None)  # the next run falls back to the newest month
        st.error(tx("page.no_month", error=str(exc)))
        return
    options = [str(m) for m in reversed(data.months)] or [str(data.month)]
    if "month" not in st.session_state and str(data.month) in options:
        st.session_state["month"] = str(data.month)
    st.sidebar.selectbox(tx("sidebar.month"), options, key="month")
    render_overview(data, lang)


@st.cache_data(ttl=CACHE_TTL_S, show_spinner=False)
def _cached(db: str, config: str | None, month: str | None) -> OverviewData:
    return load_overview(db, config, Month.parse(month) if month else None)


def main(argv: Sequence[str] | None = None) -> None:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    st.set_page_config(page_title="GPU Steward", layout="wide")
    run_app(lambda month: _cached(args.db, args.config, str(month) if month else None), first_month=args.month)


if __name__ == "__main__":
    main()
