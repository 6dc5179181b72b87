"""How the pages draw tables: a status in words on a coloured cell, long text wrapped, and a grid only where a
table is too long to read whole.

A status is written as a word from the catalogue ("missed", "未达标") on a coloured background, never
as a glyph: emoji circles and check marks render as empty boxes where no colour-emoji font is
installed (Debian's Chromium with the project's fonts), and colour alone says nothing to a reader
who cannot tell red from green. The words carry the meaning; the colour helps the eye find them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import polars as pl
import streamlit as st

from dashboards.texts import Texts

STATIC_ROWS = 20
"""Up to this many rows a table is drawn whole, as a static table: a screen shows it at once, its cells wrap, and the
browser builds it in a fraction of a grid's time (a Streamlit page with one 30-row grid opened 0.7 s later than the
same page without it, with a 30-row `st.table` 0.2 s later, and the static table here costs less than that: see
`show_wrapped`; docs/performance.md, "2026-12-03, evening"). A longer table is a grid, which scrolls and sorts."""

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


# The static table's look, close to Streamlit's own tables: thin rules, the header in the caption's grey, numbers
# to the right; a status cell's colours come from STATUS_STYLES through the Styler's per-cell rules.
TABLE_CSS = (
    "<style>"
    ".gs-table{overflow-x:auto}"
    ".gs-table table{border-collapse:collapse;width:100%;font-size:0.875rem;line-height:1.5}"
    ".gs-table th,.gs-table td{border:1px solid rgba(49,51,63,0.1);padding:0.25rem 0.5rem;text-align:left;"
    "vertical-align:top}"
    ".gs-table th{font-weight:400;color:rgba(49,51,63,0.6)}"
    ".gs-table td.gs-number{text-align:right;white-space:nowrap}"
    ".gs-table td.gs-short{white-space:nowrap}"
    "</style>"
)


def _static(frame: pl.DataFrame, tx: Texts) -> Any:
    """A pandas Styler for a static table: the status coloured, every text escaped, numbers written in the page's
    language and set to the right (a grid formats its own; a static table would show a float's every digit)."""
    decimals = {c: 0 if dtype.is_integer() else 3 for c, dtype in frame.schema.items() if dtype.is_numeric()}
    styled = _styled(frame, tx)
    styler = (styled if not isinstance(styled, pl.DataFrame) else styled.to_pandas().style).hide(axis="index")
    numbers = {c: (lambda v, d=d: "—" if v is None or math.isnan(v) else tx.fmt.trimmed(float(v), d))
               for c, d in decimals.items()}
    # One format call: a later one would reset the escaping of the columns it does not name.
    styler = styler.format(numbers or None, escape="html").format_index(escape="html", axis=1)
    classes = {c: [_cell_class(frame, c, decimals)] * frame.height for c in frame.columns}
    return styler.set_td_classes(pl.DataFrame(classes, schema=dict.fromkeys(frame.columns, pl.String)).to_pandas())


SHORT_TEXT = 16
"""A text column whose every cell is at most this many characters (a status word, a name, "8.9 GPUs") is kept
on one line, so the long text beside it (evidence, a reason) takes the width and wraps instead of it: otherwise
the browser shares the width out and a status such as "未达标" breaks one character per line."""


def _cell_class(frame: pl.DataFrame, column: str, decimals: dict[str, int]) -> str:
    if column in decimals:
        return "gs-number"
    longest = frame[column].cast(pl.String).str.len_chars().max() if frame.height else 0
    return "gs-short" if isinstance(longest, int) and longest <= SHORT_TEXT else ""


def show_table(frame: pl.DataFrame, tx: Texts) -> None:
    """The status column (when there is one) coloured by its words: a static table up to STATIC_ROWS rows, a
    scrollable, sortable grid beyond."""
    if frame.height <= STATIC_ROWS:
        show_wrapped(frame, tx)
        return
    st.dataframe(_styled(frame, tx), hide_index=True, width="stretch")


def show_wrapped(frame: pl.DataFrame, tx: Texts) -> None:
    """A static table whose cells wrap: for a few rows with long text (a plan's reasons, the evidence of
    what needs attention), which a grid cuts off at the column's width.

    Drawn as one HTML element (`st.html`, which sanitises what it inserts; the Styler escapes every cell and
    header as well): `st.table` renders each cell through Streamlit's Markdown renderer, which took about 0.5 s of
    the browser's work on the demo month's overview (some 250 cells) and on the queue and idle pages
    (docs/performance.md, "2026-12-03, evening")."""
    st.html(f'{TABLE_CSS}<div class="gs-table" data-testid="gsTable">{_static(frame, tx).to_html()}</div>')
