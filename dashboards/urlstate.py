"""A page and its filters as a URL: widgets seeded from the query parameters, written back as they change.

The parameters are the stable names of gpusteward/links.py (`team=research`, not the team's display
name, nor a word of the viewer's language), so a link the review or an alert wrote opens the same
page in either language. Streamlit's own widget binding would put the options' displayed text in
the URL; this keeps keys there instead.

Seeding: a parameter in the URL sets its widget when the URL says something other than what this
session last wrote there (a link opened, in a new session or through an in-app page link); after the
widgets are drawn, their values are written back, so the address always shows the page as it is.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Protocol

WRITTEN = "_url_written"


class State(Protocol):
    """What this module uses of `st.session_state`."""

    def get(self, key: str, /) -> Any: ...
    def __setitem__(self, key: str, value: Any, /) -> None: ...


class QueryParams(Protocol):
    """What this module uses of `st.query_params`."""

    def get_all(self, key: str) -> list[str]: ...
    def __contains__(self, key: object) -> bool: ...
    def __setitem__(self, key: str, value: str | Iterable[str]) -> None: ...
    def __delitem__(self, key: str) -> None: ...


def _written(state: State) -> dict[str, list[str]]:
    held = state.get(WRITTEN)
    return held if isinstance(held, dict) else {}


def incoming(state: State, params: QueryParams, name: str) -> list[str] | None:
    """The URL's values of `name` when they are news to this session (not what it last wrote), else None."""
    values = list(dict.fromkeys(params.get_all(name)))
    if not values or values == _written(state).get(name):
        return None
    return values


def seed_one(state: State, params: QueryParams, name: str, key: str,
             options: Sequence[str]) -> None:
    """Set the single-choice widget `key` from parameter `name` when the URL brings a valid new value."""
    values = incoming(state, params, name)
    valid = [v for v in values or () if v in options]
    if valid:
        state[key] = valid[0]


def seed_many(state: State, params: QueryParams, name: str, key: str,
              options: Sequence[str]) -> None:
    """Set the multi-choice widget `key` from parameter `name` (repeated) when the URL brings new values;
    values that are not options are dropped, as Streamlit drops them."""
    values = incoming(state, params, name)
    if values is not None:
        state[key] = [v for v in values if v in options]


def write(state: State, params: QueryParams, values: dict[str, Sequence[str]]) -> None:
    """Put the widgets' values in the URL (an empty one removes its parameter) and remember them."""
    for name, vals in values.items():
        if vals:
            params[name] = list(vals) if len(vals) > 1 else vals[0]
        elif name in params:
            del params[name]
    state[WRITTEN] = _written(state) | {name: list(vals) for name, vals in values.items()}
