"""AppTest script: the whole app (language, month, filters, pages) over the sample read model.

Session state may set `_team` (a team a trusted proxy passed), `_api` and `_token` (the control API).
"""

from __future__ import annotations

from dataclasses import replace

import streamlit as st

from dashboards.app import run_app
from gpusteward.config.schema import ClusterConfig
from tests.dashboards.sample import AS_OF, sample_model
from tests.reports.fixtures import demo_config

config = replace(demo_config(), clusters=[ClusterConfig(name="east", gpus=32), ClusterConfig(name="west", gpus=32)])
team = st.session_state.get("_team")
run_app(
    sample_model,
    config,
    api_url=st.session_state.get("_api"),
    api_token=st.session_state.get("_token"),
    team_header="X-Gpusteward-Team",
    headers=lambda: {"X-Gpusteward-Team": team} if team else {},
    now=AS_OF.replace(hour=3, minute=14),
)
