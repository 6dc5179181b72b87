"""Filters from the URL: a parameter sets its widget only when it is news to the session, invalid values are
dropped, and the widgets' values are written back (an empty one removes its parameter)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from dashboards import urlstate


class Params(dict[str, list[str]]):
    """`st.query_params` as urlstate uses it: repeated keys are lists."""

    def get_all(self, key: str) -> list[str]:
        return list(self.get(key, []))

    def __setitem__(self, key: str, value: str | Iterable[str]) -> None:
        super().__setitem__(key, [value] if isinstance(value, str) else list(value))


def test_a_link_seeds_the_filters_once() -> None:
    state: dict[str, Any] = {}
    params = Params()
    params["team"] = ["research", "nobody", "research"]
    urlstate.seed_many(state, params, "team", "f_teams", ["research", "vision"])
    assert state["f_teams"] == ["research"]  # an unknown team is dropped, a repeated one kept once
    urlstate.write(state, params, {"team": ["research"], "cluster": []})
    state["f_teams"] = ["vision"]  # the viewer changes the filter; the URL still says research
    urlstate.seed_many(state, params, "team", "f_teams", ["research", "vision"])
    assert state["f_teams"] == ["vision"]  # what this session wrote is not news
    urlstate.write(state, params, {"team": state["f_teams"]})
    assert params.get_all("team") == ["vision"]


def test_an_empty_filter_leaves_the_url_and_a_single_choice_needs_a_valid_value() -> None:
    state: dict[str, Any] = {"month": "2026-10"}
    params = Params()
    params["month"] = "1999-01"
    params["cluster"] = "east"
    urlstate.seed_one(state, params, "month", "month", ["2026-10", "2026-11"])
    assert state["month"] == "2026-10"
    urlstate.write(state, params, {"cluster": [], "month": ["2026-11"]})
    assert "cluster" not in params
    assert params.get_all("month") == ["2026-11"]
    params["month"] = "2026-10"  # an in-app link to another month
    urlstate.seed_one(state, params, "month", "month", ["2026-10", "2026-11"])
    assert state["month"] == "2026-10"
