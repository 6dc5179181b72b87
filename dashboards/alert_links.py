"""From an alert to the page that shows what is behind it (gpusteward/links.py decides which page)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import polars as pl
import streamlit as st

from dashboards.folds import fold
from dashboards.view import View
from gpusteward import links

SCREENS = Path(__file__).parent / "screens"
SHOWN = 20


def destination(alert: dict[str, object], month: str, tz: str) -> links.Destination:
    """The page and filter of one alert: its line's page, on its subject, on the day (in `tz`) it began."""
    start = alert.get("starts_at")
    day = start.replace(tzinfo=UTC).astimezone(ZoneInfo(tz)).date() if isinstance(start, datetime) else None
    return links.for_line(str(alert.get("line") or ""), str(alert.get("subject") or ""), month, day)


def show(view: View, latest: pl.DataFrame) -> None:
    """A link per alert (`latest`: each alert's latest record, dashboards.page_frames.latest_alerts), newest
    first, to its page, filters set."""
    if latest.is_empty():
        return
    tx = view.tx
    latest = latest.sort("starts_at", descending=True, nulls_last=True)
    with fold(tx("alerts.open_title"), "alerts_open") as unfolded:  # its links are built only when unfolded
        if not unfolded:
            return
        for alert in latest.head(SHOWN).iter_rows(named=True):
            target = destination(alert, str(view.month), tx.zone)
            label = tx("alerts.open", line=tx.fmt.term("line", alert["line"]), subject=str(alert["subject"] or "—"),
                       since=tx.fmt.moment(alert["starts_at"]), page=tx(f"nav.{target.page}"))
            st.page_link(str(SCREENS / f"{target.page}.py"), label=label, query_params=target.query())
