"""AppTest script: the whole app (language, month, filters, pages) over the sample read model.

Session state may set `_team` (a team a trusted proxy passed), `_api` and `_token` (the control API),
`_user_header`, `_groups_header` and `_team_header` (the sign-in headers the dashboard is configured to
trust) and `_headers` (the request's headers as (name, value) pairs; a repeated header stays repeated).
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from dashboards.app import run_app
from gpusteward.config.schema import ClusterConfig
from tests.dashboards.sample import AS_OF, sample_model
from tests.reports.fixtures import demo_config


class RequestHeaders(dict[str, str]):
    """Headers as `st.context.headers` gives them: the last value per name, and `get_all` for every one."""

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs

    def get_all(self, key: str) -> list[str]:
        return [value for name, value in self.pairs if name.lower() == key.lower()]


config = replace(demo_config(), clusters=[ClusterConfig(name="east", gpus=32), ClusterConfig(name="west", gpus=32)])
team = st.session_state.get("_team")
pairs = [*([("X-Gpusteward-Team", team)] if team else []), *st.session_state.get("_headers", [])]
run_app(
    sample_model,
    config,
    api_url=st.session_state.get("_api"),
    api_token=st.session_state.get("_token"),
    team_header="X-Gpusteward-Team" if team or st.session_state.get("_team_header") else None,
    user_header=st.session_state.get("_user_header"),
    groups_header=st.session_state.get("_groups_header"),
    headers=lambda: RequestHeaders(pairs),
    now=AS_OF.replace(hour=3, minute=14),
)
