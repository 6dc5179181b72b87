"""The tables an AppTest run drew, in page order, whichever way each was drawn.

A page draws a short table as static HTML (`st.html`) and a long one as a grid (dashboards/tables.py), so a test
that reads a table's rows asks for both kinds. A static table's cells come back as the text shown (numbers
written in the page's language), a grid's as its frame's values.
"""

from __future__ import annotations

from html.parser import HTMLParser
from typing import Any

import polars as pl


class _Cells(HTMLParser):
    """The rows of an HTML table, each a list of its cells' texts."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell.append(data)


def static_frame(html: str) -> Any:
    """A static table's rows under its header, as the text each cell shows (a pandas frame, as a grid's value)."""
    cells = _Cells()
    cells.feed(html[html.index("<table"):])
    header, *rows = cells.rows
    return pl.DataFrame(rows, schema=dict.fromkeys(header, pl.String), orient="row").to_pandas()


def _is_table(element: Any) -> bool:
    kind = getattr(element, "type", None)
    return kind == "dataframe" or (kind == "html" and "<table" in element.value)


def table_elements(node: Any) -> list[Any]:
    """Every grid and static table under `node` (an AppTest, or one of its blocks such as an expander), top to
    bottom: grids (`.value` a pandas frame, `.proto.arrow_data` their styles) and `st.html` elements."""
    root = getattr(node, "_tree", node)
    return [element for element in root if _is_table(element)]


def tables(node: Any) -> list[Any]:
    """Each of `table_elements(node)` as a pandas frame (a static table's cells as the text shown)."""
    return [static_frame(e.value) if e.type == "html" else e.value for e in table_elements(node)]


def number(cell: object) -> float:
    """A number as a static table writes it (digits grouped by the catalogues' "," in both languages)."""
    return float(str(cell).replace(",", ""))
