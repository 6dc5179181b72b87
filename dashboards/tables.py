"""How the pages draw tables: a status in words on a coloured cell, and long text wrapped.

A status is written as a word from the catalogue ("missed", "未达标") on a coloured background, never
as a glyph: emoji circles and check marks render as empty boxes where no colour-emoji font is
installed (Debian's Chromium with the project's fonts), and colour alone says nothing to a reader
who cannot tell red from green. The words carry the meaning; the colour helps the eye find them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import polars as pl
import streamlit as st

from dashboards.texts import Texts

# (text, background): red for a miss or a firing alert, amber for at risk, green for met, grey for not judged.
MISSED = "color: #8b1a1a; background-color: #fde3e1; font-weight: 600"
AT_RISK = "color: #7a4a00; background-color: #fff1cc; font-weight: 600"
MET = "color: #1d5e24; background-color: #e2f3e4"
NOT_JUDGED = "color: #4a4a4a; background-color: #eeeeee"
STATUS_STYLES: Mapping[str, str] = {
    "sla.status.missed": MISSED,
    "sla.status.at_risk": AT_RISK,
    "sla.status.met": MET,
    "sla.status.none": NOT_JUDGED,
    "alert.status.firing": MISSED,
    "alert.status.resolved": MET,
}


def status_styles(tx: Texts) -> dict[str, str]:
    """The CSS of each status word in the page's language."""
    return {tx(key): css for key, css in STATUS_STYLES.items()}


def _styled(frame: pl.DataFrame, tx: Texts) -> Any:
    """A pandas Styler colouring the status column by its words; the frame itself when it has none."""
    status = tx("col.status")
    if status not in frame.columns:
        return frame
    styles = status_styles(tx)
    return frame.to_pandas().style.map(lambda word: styles.get(str(word), ""), subset=[status])


def show_table(frame: pl.DataFrame, tx: Texts) -> None:
    """A scrollable, sortable grid; the status column (when there is one) coloured by its words."""
    st.dataframe(_styled(frame, tx), hide_index=True, width="stretch")


def show_wrapped(frame: pl.DataFrame, tx: Texts) -> None:
    """A static table whose cells wrap: for a few rows with long text (a plan's reasons, the evidence of
    what needs attention), which a grid cuts off at the column's width."""
    st.table(_styled(frame, tx), hide_index=True)
