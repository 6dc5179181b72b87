"""AppTest script: the overview page with injected data; `lang` and `empty` come from session state."""

from __future__ import annotations

import dataclasses

import streamlit as st

from dashboards.overview import render_overview
from tests.dashboards.sample import empty_overview, sample_overview

data = empty_overview() if st.session_state.get("empty") else sample_overview()
data = dataclasses.replace(data, zone=st.session_state.get("zone", "UTC"))
render_overview(data, "zh" if st.session_state.get("lang") == "zh" else "en")
