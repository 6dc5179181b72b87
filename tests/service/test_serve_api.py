"""The control API: token auth, audited plan decisions, silences, acknowledgements, review triggers."""

from __future__ import annotations

import dataclasses
import json
import logging
import time
import urllib.request
from datetime import timedelta
from typing import Any

import polars as pl
import pytest

from service.api_tokens import Tokens, load_tokens, parse_tokens
from tests.service.serve_helpers import ServedDay, published
from warehouse.readmodel import load_read_model


def post(served: ServedDay, path: str, body: dict[str, Any] | None = None, token: str | None = "alice-secret-token",
         ) -> tuple[int, dict[str, Any]]:
    data = json.dumps(body or {}).encode()
    request = urllib.request.Request(served.base + path, data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    if token is not None:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        # A control call waits on the service's one write lock while a job runs (issue 22); under a load
        # average of 20, a random-order run saw 30 s pass there, so the client waits longer than that.
        with urllib.request.urlopen(request, timeout=180) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def _plan_id(served: ServedDay) -> str:
    plans = load_read_model(served.root / "readmodel").plans()
    return str(plans.sort("created_at")["plan_id"][-1])


def test_a_request_without_a_valid_token_is_refused(served: ServedDay) -> None:
    plan = _plan_id(served)
    assert post(served, f"/api/v1/plans/{plan}/approve", token=None)[0] == 401
    assert post(served, f"/api/v1/plans/{plan}/approve", token="guess")[0] == 401
    assert load_read_model(served.root / "readmodel").plans().filter(pl.col("decision").is_null()).height >= 1


def test_approving_a_plan_is_audited_and_published(served: ServedDay, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    plan = _plan_id(served)
    # The served day's plan makes a protected objective worse in its replay: refused without an override.
    status, body = post(served, f"/api/v1/plans/{plan}/approve", {"reason": "capacity review 10-03"})
    assert status == 409, body
    assert "override" in body["error"]
    status, body = post(served, f"/api/v1/plans/{plan}/approve",
                        {"reason": "capacity review 10-03", "override": "eval waits accepted"})
    assert status == 200, body
    assert body["actor"] == "alice"
    model = published(served, lambda m: m.plans().filter(plan_id=plan)["decision"][0] is not None)
    row = model.plans().filter(plan_id=plan).row(0, named=True)
    assert (row["decision"], row["decided_by"]) == ("approved", "alice")
    audit = model.control_actions().filter(target=plan).row(0, named=True)
    assert (audit["action"], audit["actor"], audit["reason"]) == ("plan.approve", "alice", "capacity review 10-03")
    assert post(served, f"/api/v1/plans/{plan}/reject", token="bob-secret-token")[0] == 409
    assert post(served, "/api/v1/plans/2026-10-nope/approve")[0] == 404
    assert "secret-token" not in caplog.text


def test_silence_and_acknowledge_an_alert(served: ServedDay) -> None:
    fingerprint = str(load_read_model(served.root / "readmodel").alerts()["fingerprint"][0])
    assert post(served, f"/api/v1/alerts/{fingerprint}/silence", {"minutes": 0})[0] == 400
    status, _ = post(served, f"/api/v1/alerts/{fingerprint}/silence", {"minutes": 120, "reason": "maintenance"},
                     token="bob-secret-token")
    assert status == 200
    assert post(served, f"/api/v1/alerts/{fingerprint}/acknowledge")[0] == 200
    model = published(served, lambda m: m.alert_states().filter(fingerprint=fingerprint)["acknowledged_by"].to_list()
                      == ["alice"])
    state = model.alert_states().filter(fingerprint=fingerprint).row(0, named=True)
    assert state["silenced_by"] == "bob"
    assert state["acknowledged_by"] == "alice"
    assert state["silenced_until"] is not None
    assert post(served, "/api/v1/alerts/00000000deadbeef/acknowledge")[0] == 404


def test_trigger_a_review(served: ServedDay) -> None:
    # Issue 22: an impossible month passed the pattern, was audited, then failed; now it is refused first.
    status, body = post(served, "/api/v1/reviews", {"month": "2026-13"})
    assert (status, body["where"]) == (400, "body.month")
    status, body = post(served, "/api/v1/reviews", {"month": "2026-10"})
    assert status == 202, body
    review = served.root / "reports" / "review-2026-10.zh.md"
    deadline = time.monotonic() + 300  # a hang guard: the review of a loaded machine took over a minute
    while not review.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert review.exists()
    assert post(served, "/api/v1/reviews", {"month": "October"})[0] == 400
    audited = published(served, lambda m: "2026-10" in m.control_actions()["target"].to_list()).control_actions()
    assert "2026-13" not in audited["target"].to_list()
    assert "2026-10" in audited["target"].to_list()
    status, metrics = served.get("/metrics")
    assert 'gpusteward_control_actions_total{action="review.trigger",status="202"} 1.0' in metrics


def test_tokens_come_from_env_and_files_and_never_show(tmp_path: Any) -> None:
    tokens_file = tmp_path / "tokens"
    tokens_file.write_text("# ops\ncarol:carol-token\n", encoding="utf-8")
    tokens = load_tokens([tokens_file], env={"GPUSTEWARD_API_TOKENS": "dave:dave-token"})
    assert tokens.identify("Bearer carol-token") == "carol"
    assert tokens.identify("Bearer dave-token") == "dave"
    assert tokens.identify("Basic dave-token") is None
    assert "token" not in repr(tokens).replace("Tokens", "")
    with pytest.raises(ValueError, match="not shown") as info:
        parse_tokens("just-a-secret")
    assert "just-a-secret" not in str(info.value)
    assert len(Tokens({})) == 0


def test_gets_answer_while_a_job_holds_the_write_lock_and_actions_give_up_unrecorded(served: ServedDay) -> None:
    """Issue 22: every control call waited on the job's lock. GETs never take it; an action waits at most
    `action_wait`, then 503 with nothing recorded."""
    service = served.service
    before = load_read_model(served.root / "readmodel").control_actions().height
    settings = service.settings
    service.settings = dataclasses.replace(settings, action_wait=timedelta(seconds=0.5))
    try:
        with service.lock:  # as a long evaluation would
            assert served.get("/healthz")[0] == 200
            assert served.get("/metrics")[0] == 200
            assert served.get("/api/v1/openapi.json")[0] == 200
            status, body = post(served, "/api/v1/reviews", {"month": "2026-10"})
    finally:
        service.settings = settings
    assert status == 503, body
    assert "nothing was recorded" in body["error"]
    assert load_read_model(served.root / "readmodel").control_actions().height == before
