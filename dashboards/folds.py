"""Folded sections and tabs whose content is built only when a reader opens them.

Streamlit sends everything inside a plain `st.expander` with the page, folded or not, and the browser
builds it: the demo month's overview sent ten grids, six of them folded (each chart's numbers, the data
sources' status), and the review page a 112 kB document. A fold here is Streamlit's lazy expander
(`on_change="rerun"`, its open state kept in the session under `key`): its body runs only while it is
open, so what nobody unfolds costs nothing, and unfolding costs one rerun of the page.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import streamlit as st


@contextmanager
def fold(label: str, key: str, *, expanded: bool = False) -> Iterator[bool]:
    """An expander headed `label`; yields whether it is open, and what the caller draws when it is goes
    inside. `key` is unique on the page and the same on every run (the session keeps the state by it)."""
    with st.expander(label, expanded=expanded, key=key, on_change="rerun") as box:
        yield bool(box.open)


def lazy_tabs(labels: Sequence[str], key: str) -> list[tuple[Any, bool]]:
    """Streamlit's tabs with `on_change="rerun"`: (tab, whether it is the chosen one) per label, the first
    chosen at first. Draw a tab's body only when it is chosen; choosing another reruns the page, so what no
    reader looks at is never built or sent. `key` as for `fold`."""
    return [(tab, bool(tab.open)) for tab in st.tabs(list(labels), key=key, on_change="rerun")]
