"""AppTest script: the dashboard over a running service's read model, with its control API."""

from __future__ import annotations

import streamlit as st

from dashboards.app import run_app
from gpusteward.config import load_config
from warehouse.readmodel import load_read_model

root = str(st.session_state["_root"])
run_app(
    lambda: load_read_model(f"{root}/readmodel"),
    load_config(f"{root}/gpusteward.toml"),
    api_url=str(st.session_state["_api"]),
    api_token=str(st.session_state["_token"]),
)
