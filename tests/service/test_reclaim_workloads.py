"""Kueue Workloads in the live reclaimer and its replay: the warning names one `namespace/name`, and the path
it gives, `/api/v1/reclaim/jobs/{cluster}/{namespace}/{name}/exempt`, reaches the controller as that job, which
a lead of its team may exempt and the reclaimer then leaves alone; the demo's shadow replay decides what the
live reclaimer would have for a Workload whose GPU-minutes are labelled by its pods."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import httpx
import polars as pl
import pytest

from gpusteward.tables import GPU_MINUTES, JOBS
from service.api import RECLAIM_JOB
from service.reclaim_job import Reclaim, check_objection, replay_shadow
from tests.service.api_rig import served_api
from tests.service.test_reclaim_job import FakeScheduler, _config
from tests.sla.builders import at, frame, minutes
from tests.sla.reclaim_builders import IDLE, notebook
from warehouse import control, open_warehouse
from warehouse.control import ControlError
from warehouse.reclaim_ledger import decisions

WORKLOAD = "ml-team/job-lab-7f3c2"  # the Workload of the Job `lab`, whose pod is `lab-x9k2p`


@pytest.mark.parametrize(("path", "target"), [
    ("/api/v1/reclaim/jobs/east/ml-team/job-lab-7f3c2/exempt", "east/ml-team/job-lab-7f3c2"),
    ("/api/v1/reclaim/jobs/east/42/exempt", "east/42"),
])
def test_the_path_names_the_job_the_controller_gets(path: str, target: str) -> None:
    with served_api({"lea": "t"}, ready=True) as api:
        answer = httpx.post(api.url + path, json={"reason": "demo"}, headers={"Authorization": "Bearer t"}, timeout=10)
        assert answer.status_code == 200, answer.text
        assert [r.target for r in api.controller.acted] == [target]


@pytest.mark.parametrize("path", [
    "/api/v1/reclaim/jobs/east/ML_Team/job-lab/exempt",  # not a Kubernetes namespace
    "/api/v1/reclaim/jobs/east/ml-team/-lab/exempt",  # nor a name
    "/api/v1/reclaim/jobs/east/lab/exempt",  # one part: a Slurm job id is a number
])
def test_a_job_that_is_neither_a_slurm_id_nor_a_workload_is_refused_naming_the_path(path: str) -> None:
    with served_api({"lea": "t"}, ready=True) as api:
        answer = httpx.post(api.url + path, json={}, headers={"Authorization": "Bearer t"}, timeout=10)
        assert answer.status_code == 400, answer.text
        assert answer.json()["where"] == "path job_id"
        assert "Kueue Workload's namespace and name" in answer.json()["error"]
        assert api.controller.acted == []
    assert not RECLAIM_JOB.fullmatch(path.split("/jobs/")[1].removesuffix("/exempt"))


def test_a_leads_objection_to_a_workload_keeps_it_from_being_reclaimed(tmp_path: Path) -> None:
    config = _config(tmp_path)
    workload = notebook(7, user="ana", job_ref=WORKLOAD, name="lab", labels="{}", reservation="")
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        wh.ingest("test", {"jobs": frame([workload], JOBS),
                           "gpu_minutes": frame(minutes("ml-team/lab-x9k2p", [IDLE] * 240, host="k1"), GPU_MINUTES)})
        scheduler = FakeScheduler()
        Reclaim(config, wh, lambda _cluster: scheduler).run(at(240))
        warned = decisions(wh)
        assert warned["job_id"].to_list() == [WORKLOAD]
        notice = json.loads((tmp_path / "platform.jsonl").read_text(encoding="utf-8").splitlines()[0])
        assert f"/api/v1/reclaim/jobs/east/{WORKLOAD}/exempt" in notice["annotations"]["description"]

        with pytest.raises(ControlError, match="not a lead of team nlp"):
            check_objection(wh, config, "mallory", "operator", f"east/{WORKLOAD}")
        with pytest.raises(ControlError, match="no job ml-team/job-other") as missing:
            control.record(wh, "lea", "reclaim.exempt", "east/ml-team/job-other", at=at(241))
        assert missing.value.status == 404
        check_objection(wh, config, "lea", "operator", f"east/{WORKLOAD}")
        control.record(wh, "lea", "reclaim.exempt", f"east/{WORKLOAD}", at=at(241), reason="demo tomorrow")

        wh.ingest("test", {"gpu_minutes": frame(minutes("ml-team/lab-x9k2p", [IDLE] * 120, start=240, host="k1"),
                                                GPU_MINUTES)})
        Reclaim(config, wh, lambda _cluster: scheduler).run(at(360))  # past the grace: cancelled, but for the objection
        assert scheduler.calls == []
        assert decisions(wh).filter(pl.col("kind") == "action").is_empty()


def test_the_replay_follows_a_workload_through_its_grace_as_the_live_reclaimer_does(tmp_path: Path) -> None:
    """Its pods' idle stretches say when to plan; the plan names the Workload. Warned at 01:00 (idle for
    the notebooks' hour), acted on (shadow) when its one-hour grace ends at 02:00."""
    config = _config(tmp_path)
    workload = notebook(7, user="ana", job_ref=WORKLOAD, name="lab", labels="{}", reservation="")
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        wh.ingest("test", {"jobs": frame([workload], JOBS),
                           "gpu_minutes": frame(minutes("ml-team/lab-x9k2p", [IDLE] * 240, host="k1"), GPU_MINUTES)})
        replay_shadow(wh, config, at(0), at(240), timedelta(minutes=15))
        lines = sorted(decisions(wh).select("decided_at", "job_id", "kind").rows())
    assert lines == [(at(60), WORKLOAD, "warning"), (at(120), WORKLOAD, "action")]
