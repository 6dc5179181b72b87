"""The tables an AppTest run drew, in page order, whichever way each was drawn.

A page draws a short table as a static table and a long one as a grid (dashboards/tables.py), so a test that
reads a table's rows asks for both kinds.
"""

from __future__ import annotations

from typing import Any

TABLE_TYPES = ("dataframe", "table")


def table_elements(node: Any) -> list[Any]:
    """Every grid and static table under `node` (an AppTest, or one of its blocks such as an expander), top to
    bottom; each has `.value` (a pandas frame) and `.proto.arrow_data` (its styles among them)."""
    root = getattr(node, "_tree", node)
    return [element for element in root if getattr(element, "type", None) in TABLE_TYPES]


def tables(node: Any) -> list[Any]:
    """The values (pandas frames) of `table_elements(node)`."""
    return [element.value for element in table_elements(node)]
