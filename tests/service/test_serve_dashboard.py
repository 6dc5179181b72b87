"""The dashboard's approve button changes a plan's state through the service's control API."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date
from pathlib import Path

import polars as pl
import pytest
from streamlit.testing.v1 import AppTest

from dashboards.app import SCREENS
from simulator import simulate
from tests.service.serve_helpers import ServedDay, published, start_service, stop_service
from warehouse.readmodel import load_read_model

HERE = Path(__file__).parent


@pytest.fixture(scope="module")
def own_served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedDay]:
    """A service of this test's own: plan ids derive from the proposed changes, so the shared
    service's one plan may already be decided by the API tests."""
    staging = tmp_path_factory.mktemp("sim-dashboard")
    simulate(staging, date(2026, 10, 1), 2, 7, nodes=8)
    day = start_service(tmp_path_factory.mktemp("svc-dashboard"), staging)
    try:
        assert day.service.ready.wait(120), "the service never became ready"
        assert day.day_done.wait(1200), "the simulated day did not finish"  # a hang, not a speed limit
        yield day
    finally:
        stop_service(day)


def test_the_approve_button_approves_through_the_api(own_served: ServedDay) -> None:
    served = own_served
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
    # The served day's plan makes a protected objective worse in its replay: refused without an override.
    at.button(key="approve").click().run()
    assert "409" in at.warning[0].body
    assert "override" in at.warning[0].body
    at.text_input(key="plan_override").set_value("eval waits accepted for Q4").run()
    at.button(key="approve").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.success, [w.body for w in at.warning]

    model = published(served, lambda m: m.plans().filter(pl.col("plan_id") == plan_id)["decision"][0] is not None)
    row = model.plans().filter(pl.col("plan_id") == plan_id).row(0, named=True)
    assert (row["decision"], row["decided_by"]) == ("approved", "bob")
    at.button(key="approve").click().run()  # a second decision is refused, and the page says so
    assert "409" in at.warning[0].body
