"""The dashboard's approve button changes a plan's state through the service's control API."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from streamlit.testing.v1 import AppTest

from dashboards.app import SCREENS
from tests.service.serve_helpers import ServedDay
from warehouse.readmodel import load_read_model

HERE = Path(__file__).parent


def test_the_approve_button_approves_through_the_api(served: ServedDay) -> None:
    plans = load_read_model(served.root / "readmodel").plans()
    undecided = plans.filter(pl.col("decision").is_null())
    assert undecided.height >= 1
    plan_id = str(undecided["plan_id"][0])

    at = AppTest.from_file(str(HERE / "dashboard_script.py"), default_timeout=60)
    at.session_state["_root"] = str(served.root)
    at.session_state["_api"] = served.base
    at.session_state["_token"] = "bob-secret-token"
    at.run()
    at.switch_page(str(SCREENS / "plans.py")).run()
    assert not at.exception, [e.value for e in at.exception]
    at.selectbox(key="plan_choice").set_value(plan_id).run()
    at.text_input(key="plan_reason").set_value("fits the Q4 budget").run()
    at.button(key="approve").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.success, [w.body for w in at.warning]

    row = load_read_model(served.root / "readmodel").plans().filter(pl.col("plan_id") == plan_id).row(0, named=True)
    assert (row["decision"], row["decided_by"]) == ("approved", "bob")
    at.button(key="approve").click().run()  # a second decision is refused, and the page says so
    assert "409" in at.warning[0].body
