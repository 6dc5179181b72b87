"""The control API's approve endpoint and a plan its replay flags: refused (409) without an override,
approved with one, and the override stored in the audit trail with who approved and when."""

from __future__ import annotations

import json
import shutil
import threading
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gpusteward.clock import FakeClock
from gpusteward.config import example_config_path, load_config
from gpusteward.domain import Month
from quota.plan import Plan, PlanItem
from service.serve import ServeSettings, Service
from tests.service.test_cli_quota import FLAG
from warehouse import control, open_warehouse

NOW = datetime(2026, 11, 2, 9, 0, tzinfo=UTC)
TOKENS = "alice:alice-secret-token"


@pytest.fixture
def service(tmp_path: Path) -> Iterator[tuple[Service, Path]]:
    shutil.copyfile(example_config_path(), tmp_path / "gpusteward.toml")
    config = load_config(tmp_path / "gpusteward.toml")
    db = Path(config.resolve(config.warehouse.path))
    item = PlanItem("east", "account", "nlp", "nlp", 4, 5, "[]", "[]", "[]")
    for plan in (Plan("2026-10-flagged", "2026-10", NOW, (item,), protected=(FLAG,)),
                 Plan("2026-10-clean", "2026-10", NOW, (item,))):
        with open_warehouse(db) as wh:
            wh.store_plan(plan.id, Month(2026, 10), NOW, plan.status, dry_run=True, body=plan.to_dict(),
                          items=plan.to_frame())
    stop = threading.Event()

    def sleep(seconds: float) -> None:
        stop.wait(min(seconds, 0.05))

    settings = ServeSettings(read_model=tmp_path / "readmodel", port=0, settle=timedelta(0))
    svc = Service(config, settings, clock=FakeClock(NOW), stop=stop, sleep=sleep,
                  env={"GPUSTEWARD_API_TOKENS": TOKENS})
    thread = threading.Thread(target=svc.run, name="service-under-test", daemon=True)
    thread.start()
    assert svc.ready.wait(120), "the service did not get ready"
    yield svc, db
    stop.set()
    thread.join(timeout=60)


def _approve(svc: Service, plan_id: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    assert svc.url is not None
    request = urllib.request.Request(f"{svc.url}/api/v1/plans/{plan_id}/approve", data=json.dumps(body).encode(),
                                     method="POST", headers={"Authorization": "Bearer alice-secret-token"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


def test_approving_a_flagged_plan_needs_an_override_which_the_audit_keeps(service: tuple[Service, Path]) -> None:
    svc, db = service
    status, body = _approve(svc, "2026-10-flagged", {"reason": "monthly review"})
    assert status == 409
    assert "protected objective(s) worse in its replay (interactive on east" in body["error"]
    assert '{"override": "reason"}' in body["error"]
    assert _approve(svc, "2026-10-flagged", {"override": 42})[0] == 400
    assert _approve(svc, "2026-10-clean", {"reason": "fine", "override": ""})[0] == 400
    status, body = _approve(svc, "2026-10-flagged", {"reason": "monthly review",
                                                     "override": "notebooks move to west this week"})
    assert status == 200, body
    assert (body["actor"], body["override"]) == ("alice", "notebooks move to west this week")
    assert _approve(svc, "2026-10-clean", {"reason": "fine"})[0] == 200  # an unflagged plan needs none
    svc.stop.set()
    svc_thread_done = [t for t in threading.enumerate() if t.name == "service-under-test"]
    for t in svc_thread_done:
        t.join(timeout=60)
    with open_warehouse(db) as wh:
        rows = {r["target"]: r for r in control.actions(wh).iter_rows(named=True)}
        decided = control.plan_decisions(wh).filter(plan_id="2026-10-flagged").row(0, named=True)
    assert (rows["2026-10-flagged"]["actor"], rows["2026-10-flagged"]["override"]) == (
        "alice", "notebooks move to west this week")
    assert rows["2026-10-flagged"]["acted_at"] == NOW.replace(tzinfo=None)
    assert rows["2026-10-clean"]["override"] is None
    assert (decided["decision"], decided["override"]) == ("approved", "notebooks move to west this week")
