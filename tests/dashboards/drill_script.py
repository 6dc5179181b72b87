"""AppTest script: the whole app over the drill-down sample read model (tests/dashboards/drill_sample.py).

Session state may set `_team` (a team a trusted proxy passed, as in app_script.py).
"""

from __future__ import annotations

import streamlit as st

from dashboards.app import run_app
from tests.dashboards.drill_sample import drill_config, drill_model
from tests.dashboards.sample import AS_OF

team = st.session_state.get("_team")
run_app(
    drill_model,
    drill_config(),
    team_header="X-Gpusteward-Team" if team else None,
    headers=lambda: {"X-Gpusteward-Team": team} if team else {},
    now=AS_OF.replace(hour=3, minute=14),
)
