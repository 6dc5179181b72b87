"""The live reclaimer over a real warehouse: warn -> grace -> act at the ingest watermark, once each.

A fake scheduler records the actions; receivers are JSONL files, so what the owner and the team
heard is read back. Restarts are new `Reclaim` objects over the same warehouse.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from datetime import timedelta
from pathlib import Path
from typing import Literal

import polars as pl
import pytest

from collectors.kube.reclaim import KubeReclaimActions
from collectors.reclaim_actions import ActionResult, ReclaimTarget
from collectors.slurm.job_actions import SlurmJobActions
from gpusteward.config import Config, load_config
from gpusteward.errors import TransientError
from gpusteward.tables import GPU_MINUTES, JOBS
from service.api import Request
from service.reclaim_job import Reclaim, actions_from_config, check_objection, replay_shadow
from service.serve import ServeSettings, Service
from tests.sla.builders import BASE_TOML, at, frame, job
from tests.sla.reclaim_builders import BUSY, IDLE, gpu_minutes_of, notebook, trainer
from warehouse import Warehouse, control, open_warehouse
from warehouse.control import ControlError
from warehouse.outbox import outbox_items
from warehouse.reclaim_ledger import decisions, month_lines, open_lines

POLICIES = """
[reclaim]
receivers = ["platform"]
team_receivers = { nlp = ["nlp-chat"] }
team_leads = { nlp = ["lea"] }

[[reclaim.policies]]
name = "notebooks"
scenario = "interactive"
when = "idle"
idle_for = "1h"
grace = "1h"
action = "cancel"
mode = "auto"

[[reclaim.policies]]
name = "training"
scenario = "training"
when = "idle"
idle_for = "1h"
grace = "30m"
action = "requeue"
mode = "approve"

[[alerts.receivers]]
name = "platform"
kind = "jsonl"
path = "platform.jsonl"

[[alerts.receivers]]
name = "nlp-chat"
kind = "jsonl"
path = "nlp.jsonl"
"""


@dataclass
class FakeScheduler:
    calls: list[ReclaimTarget] = field(default_factory=list)
    fail: int = 0  # transient failures before it answers

    @property
    def transport(self) -> str:
        return "fake"

    def act(self, target: ReclaimTarget) -> ActionResult:
        self.calls.append(target)
        if self.fail:
            self.fail -= 1
            raise TransientError("slurmctld is not answering")
        return ActionResult("done", "fake", f"{target.action} of job {target.job_id}")


def _config(tmp_path: Path, extra: str = "") -> Config:
    text = BASE_TOML.replace("TZ", "UTC") + POLICIES + extra
    path = tmp_path / "gpusteward.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)  # receivers' files resolve beside it


def _paused(tmp_path: Path) -> Config:
    path = tmp_path / "paused.toml"
    path.write_text(BASE_TOML.replace("TZ", "UTC") + POLICIES.replace("[reclaim]\n", "[reclaim]\npaused = true\n"),
                    encoding="utf-8")
    return load_config(path)


def _minutes(job_id: int, utils: list[float], *, host: str, start: float) -> pl.DataFrame:
    rows = frame(gpu_minutes_of(job_id, utils, host=host, start=start), GPU_MINUTES)
    return rows.with_columns(pl.format("GPU-{}-{}", "host", "gpu").alias("uuid"))


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    # Notebook 1 idle from T0; training job 2 busy; training job 3 idle (approve mode); notebook 4 on a
    # host that went silent at 03:00; notebook 5 idle but objected to. Minutes up to 04:00.
    jobs = [notebook(1, user="ana", time_limit_min=600), trainer(2), trainer(3, user="bo"), notebook(4),
            notebook(5)]
    minutes = pl.concat([
        _minutes(1, [IDLE] * 240, host="h1", start=0),
        _minutes(2, [BUSY] * 240, host="h2", start=0),
        _minutes(3, [IDLE] * 240, host="h3", start=0),
        _minutes(4, [IDLE] * 180, host="h4", start=0),
        _minutes(5, [IDLE] * 240, host="h5", start=0),
    ])
    with open_warehouse(tmp_path / "w.duckdb") as opened:
        opened.ingest("test", {"jobs": frame(jobs, JOBS), "gpu_minutes": minutes})
        yield opened


def _advance(wh: Warehouse, start: float, n: int) -> None:
    """`n` more idle minutes for jobs 1, 3 and 5 from `start` (host 4 stays silent)."""
    wh.ingest("test", {"gpu_minutes": pl.concat([_minutes(j, [IDLE] * n, host=f"h{j}", start=start)
                                                 for j in (1, 3, 5)])})


def _lines(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()] if path.exists() else []


def test_warn_then_act_after_the_grace_once_each_across_restarts(wh: Warehouse, tmp_path: Path) -> None:
    config = _config(tmp_path)
    scheduler = FakeScheduler()
    control.record(wh, "lea", "reclaim.exempt", "east/5", at=at(200), reason="demo for the board tomorrow")

    first = Reclaim(config, wh, lambda _cluster: scheduler).run(at(240))
    assert "2 new ledger lines" in first.detail
    warned = decisions(wh)
    assert sorted(warned["job_id"].to_list()) == ["1", "3"]  # not busy 2, not silent 4, not exempt 5
    assert set(warned["kind"]) == {"warning"}
    assert set(warned["state"]) == {"sent"}
    assert warned.filter(pl.col("job_id") == "1")["action_due"].item() == at(300)
    assert sorted(open_lines(wh)["job_id"]) == ["1", "3"]  # the dashboard's pending warnings
    platform, nlp = _lines(tmp_path / "platform.jsonl"), _lines(tmp_path / "nlp.jsonl")
    assert len(platform) == len(nlp) == 2  # the owners' channel and the team's, once each
    notice = next(a for a in platform if a["labels"]["job_id"] == "1")  # type: ignore[index]
    assert notice["labels"] == {  # what a router behind the webhook routes the warning to its owner by
        "alertname": "GpuReclaimWarning", "cluster": "east", "job_id": "1", "team": "nlp", "user": "ana",
        "policy": "notebooks", "action": "cancel", "mode": "auto", "severity": "warning"}
    assert "cancelled at 2026-03-01 05:00" in notice["annotations"]["description"]  # type: ignore[index]
    assert "/api/v1/reclaim/jobs/east/1/exempt" in notice["annotations"]["description"]  # type: ignore[index]
    assert "2026年03月01日 05:00 将取消" in notice["annotations"]["summary_zh"]  # type: ignore[index]

    # A restarted service at the same watermark repeats nothing; inside the notebook's grace, only training
    # job 3's 30-minute grace has run out: its requeue waits for an approver (nothing sent, nobody told twice).
    assert "0 new ledger lines" in Reclaim(config, wh, lambda _cluster: scheduler).run(at(241)).detail
    _advance(wh, 240, 30)
    assert "1 new ledger lines" in Reclaim(config, wh, lambda _cluster: scheduler).run(at(271)).detail
    assert len(_lines(tmp_path / "platform.jsonl")) == 2
    assert scheduler.calls == []
    assert "0 new ledger lines" in Reclaim(config, wh, lambda _cluster: scheduler).run(at(272)).detail

    # After the grace: notebook 1 (auto) is cancelled; training job 3 (approve) waits for an approver.
    _advance(wh, 270, 31)
    job = Reclaim(config, wh, lambda _cluster: scheduler)
    job.run(at(301))
    assert [(c.job_id, c.action) for c in scheduler.calls] == [("1", "cancel")]
    actions = decisions(wh).filter(pl.col("kind") == "action").sort("job_id")
    assert actions.select("job_id", "state", "decided_by").rows() == [
        ("1", "done", "policy notebooks"), ("3", "awaiting_approval", "policy training")]
    done = actions.row(0, named=True)
    assert (done["acted_at"], done["transport"]) == (at(301), "fake")
    assert done["gpu_hours_recovered"] == pytest.approx(299 / 60)  # 1 GPU from 05:01 to its 10-hour limit at 10:00
    assert done["warning_id"] == warned.filter(pl.col("job_id") == "1")["decision_id"].item()
    assert [a["labels"]["alertname"] for a in _lines(tmp_path / "platform.jsonl")][-1] == "GpuReclaimAction"  # type: ignore[index]

    # The approver says yes: the requeue goes out at the next turn, with the approver as who decided it.
    pending = actions.row(1, named=True)["decision_id"]
    control.record(wh, "alice", "reclaim.approve", pending, at=at(302))
    job.run(at(302))
    assert [(c.job_id, c.action) for c in scheduler.calls][-1] == ("3", "requeue")
    approved = decisions(wh).filter(pl.col("decision_id") == pending).row(0, named=True)
    assert (approved["state"], approved["decided_by"]) == ("done", "alice")
    # Nothing is sent twice, however often the service turns.
    job.run(at(303))
    assert len(scheduler.calls) == 2
    assert len(outbox_items(wh)) == 8  # two warnings and two action notices, to two receivers each
    assert open_lines(wh).is_empty()  # nothing pending any more
    month = month_lines(wh, at(0), at(24 * 60))  # what the review's reclaimed section reads
    assert month.group_by("kind").len().sort("kind").rows() == [("action", 2), ("objection", 1), ("warning", 2)]
    assert month.filter(pl.col("kind") == "objection").select("job_id", "decided_by").row(0) == ("5", "lea")


def test_a_transient_failure_is_retried_and_the_kill_switch_holds_everything(wh: Warehouse, tmp_path: Path) -> None:
    config = _config(tmp_path)
    scheduler = FakeScheduler(fail=1)
    Reclaim(config, wh, lambda _cluster: scheduler).run(at(240))
    _advance(wh, 240, 61)
    Reclaim(config, wh, lambda _cluster: scheduler).run(at(301))
    line = decisions(wh).filter((pl.col("kind") == "action") & (pl.col("job_id") == "1")).row(0, named=True)
    assert line["state"] == "pending"
    assert "retrying: slurmctld is not answering" in line["outcome"]
    paused = _paused(tmp_path)
    assert [c.job_id for c in scheduler.calls] == ["1", "5"]  # notebook 5's cancel went through
    Reclaim(paused, wh, lambda _cluster: scheduler).run(at(302))
    assert len(scheduler.calls) == 2  # the kill switch holds back even the retry
    Reclaim(config, wh, lambda _cluster: scheduler).run(at(303))
    assert [c.job_id for c in scheduler.calls] == ["1", "5", "1"]
    assert decisions(wh).filter(pl.col("decision_id") == line["decision_id"])["state"].item() == "done"


def test_an_objection_is_a_team_leads_or_an_admins(wh: Warehouse, tmp_path: Path) -> None:
    config = _config(tmp_path)
    check_objection(wh, config, "lea", "operator", "east/1")  # a lead of nlp
    check_objection(wh, config, "root", "admin", "east/1")
    with pytest.raises(ControlError, match="not a lead of team nlp") as refused:
        check_objection(wh, config, "mallory", "operator", "east/1")
    assert refused.value.status == 403
    with pytest.raises(ControlError, match="no job 99") as missing:
        check_objection(wh, config, "lea", "operator", "east/99")
    assert missing.value.status == 404
    with pytest.raises(ControlError, match="end in the future"):
        control.record(wh, "lea", "reclaim.exempt", "east/1", at=at(10), until=at(5))
    with pytest.raises(ControlError, match="no job 99"):
        control.record(wh, "lea", "reclaim.exempt", "east/99", at=at(10))
    with pytest.raises(ControlError, match="no reclaim action") as unknown:
        control.record(wh, "alice", "reclaim.approve", "0" * 32, at=at(10))
    assert unknown.value.status == 404


def test_the_service_runs_the_reclaimer_and_audits_objections_through_its_controller(
    wh: Warehouse, tmp_path: Path
) -> None:
    service = Service(_config(tmp_path), ServeSettings(read_model=tmp_path / "readmodel"),
                      reclaim_actions=lambda _cluster: FakeScheduler())
    lanes = service._lanes(wh)
    reclaimers = [job for job in lanes["analysis"] if isinstance(job, Reclaim)]
    assert [(job.name, job.interval) for job in reclaimers] == [("reclaim", service.settings.evaluate_interval)]
    service._schedule(lanes)
    service._wh = wh
    objection = Request("lea", "reclaim.exempt", "east/1", None, "demo tomorrow", role="operator", via="dashboard")
    assert service.act(objection)["action"] == "reclaim.exempt"
    with pytest.raises(ControlError, match="not a lead of team nlp"):
        service.act(Request("mallory", "reclaim.exempt", "east/3", None, None, role="operator"))
    audit = wh.query("SELECT actor, action, target, reason, via FROM control_actions ORDER BY acted_at")
    assert audit.rows() == [("lea", "reclaim.exempt", "east/1", "demo tomorrow", "dashboard")]


def test_a_shadow_replay_records_what_would_have_happened_and_sends_nothing(wh: Warehouse, tmp_path: Path) -> None:
    replayed = replay_shadow(wh, _config(tmp_path), at(0), at(240), timedelta(minutes=30))
    lines = decisions(wh)
    assert replayed.lines == lines.height > 0
    assert set(lines["state"]) == {"shadow"}  # auto and approve policies alike: a replay never sends or acts
    first = lines.filter(pl.col("job_id") == "1").sort("decided_at")
    assert first.select("kind", "decided_at").rows() == [("warning", at(60)), ("action", at(120))]
    assert first["gpu_hours_recovered"][1] == pytest.approx(8.0)  # 1 GPU from 02:00 to its limit at 10:00
    assert {item.state for item in outbox_items(wh)} == {"shadow"}


def test_each_cluster_gets_its_schedulers_actions(tmp_path: Path) -> None:
    (tmp_path / "token").write_text("t0ken\n", encoding="utf-8")
    config = _config(tmp_path, """
[[service.slurm]]
name = "east-queue"
cluster = "east"

[kubernetes]
auth = "server"
server = "https://127.0.0.1:6443"
token_file = "token"
""")
    config = replace(config, reclaim=replace(config.reclaim, kubernetes_clusters=["k8s"]))
    actions = actions_from_config(config, env={})
    assert isinstance(actions("east"), SlurmJobActions)
    kube = actions("k8s")
    assert isinstance(kube, KubeReclaimActions)
    assert kube.api.base_url == "https://127.0.0.1:6443"
    assert actions("elsewhere") is None


def _replay_world(opened: Warehouse, *, waiting: bool) -> None:
    """Five hours of a small pool: notebook 1 idle, busy for five minutes at 01:20, idle again; training job 3
    idle throughout; notebook 4 idle until its host goes silent at 01:40; notebook 6 busy. With `waiting`, job
    7 waits for a GPU of the notebooks' partition from 02:10 to 03:20 (idle_while_waiting)."""
    jobs = [notebook(1, time_limit_min=600), trainer(3, time_limit_min=600), notebook(4), notebook(6)]
    if waiting:
        jobs.append(job(7, partition="interactive", submit=130, start=200, end=None, state="RUNNING"))
    minutes = pl.concat([
        _minutes(1, [IDLE] * 80 + [BUSY] * 5 + [IDLE] * 215, host="h1", start=0),
        _minutes(3, [IDLE] * 300, host="h3", start=0),
        _minutes(4, [IDLE] * 100, host="h4", start=0),
        _minutes(6, [BUSY] * 300, host="h6", start=0),
    ])
    opened.ingest("test", {"jobs": frame(jobs, JOBS), "gpu_minutes": minutes})


@pytest.mark.parametrize("when", ["idle", "idle_while_waiting"])
def test_the_replay_decides_what_the_live_job_turning_every_interval_would_have(
    tmp_path: Path, when: Literal["idle", "idle_while_waiting"]
) -> None:
    """The replay plans only at the turns that could decide something; the ledger is the one a reclaimer
    planning at every 15-minute turn writes, line for line."""
    config = _config(tmp_path)
    if when == "idle_while_waiting":
        config = replace(config, reclaim=replace(config.reclaim, policies=[
            replace(p, when=when) if p.name == "notebooks" else p for p in config.reclaim.policies]))
    shadow = replace(config, reclaim=replace(config.reclaim, policies=[
        replace(p, mode="shadow") for p in config.reclaim.policies]))
    every = timedelta(minutes=15)
    replayed_path, live_path = tmp_path / "replayed.duckdb", tmp_path / "live.duckdb"
    with open_warehouse(replayed_path) as replayed_wh, open_warehouse(live_path) as live_wh:
        _replay_world(replayed_wh, waiting=when != "idle")
        _replay_world(live_wh, waiting=when != "idle")
        replayed = replay_shadow(replayed_wh, config, at(0), at(300), every)
        live = Reclaim(shadow, live_wh, lambda _cluster: None, notifiers={})
        for turn in range(1, 21):
            live.decide_at(at(15 * turn), at(15 * turn))
        columns = ["decision_id", "kind", "job_id", "decided_at", "state", "idle_since", "gpu_hours_recovered"]
        assert decisions(replayed_wh).select(columns).rows() == decisions(live_wh).select(columns).rows()
        assert replayed.turns < 20
        lines = sorted(decisions(replayed_wh).select("decided_at", "job_id", "kind").rows())
    if when == "idle":
        # Notebook 1: warned at 01:00, busy at 01:20 before its action was due, warned anew at 02:30 for its
        # second stretch (idle since 01:25) and cancelled at 03:30; training job 3 requeued 30 minutes after its
        # warning; notebook 4 warned, silent when its action fell due (no data is never idle).
        assert lines == [(at(60), "1", "warning"), (at(60), "3", "warning"), (at(60), "4", "warning"),
                         (at(90), "3", "action"), (at(150), "1", "warning"), (at(210), "1", "action")]
    else:
        # Nobody waited before 02:10 nor after 03:20: notebook 1's second stretch is warned at 02:30, and its
        # action falls due at 03:30 with nobody waiting, so it is never taken.
        assert lines == [(at(60), "3", "warning"), (at(90), "3", "action"), (at(150), "1", "warning")]


def test_the_review_shows_a_planted_idle_notebook_warned_then_shadow_cancelled_after_the_grace(
    wh: Warehouse, tmp_path: Path
) -> None:
    """From the replay to the review: notebook 1, idle from T0, is warned at the first 15-minute turn an hour
    idle and (in shadow) cancelled at the turn its hour of grace ends; the section counts both."""
    from reports import build_review, render_markdown
    from tests.reports.fixtures import demo_config, demo_outputs

    config = _config(tmp_path)
    replay_shadow(wh, config, at(0), at(240), timedelta(minutes=15))
    planted = decisions(wh).filter(pl.col("job_id") == "1")
    assert planted.select("kind", "decided_at", "state").rows() == [
        ("warning", at(60), "shadow"), ("action", at(120), "shadow")]
    assert planted["gpu_hours_recovered"][1] == pytest.approx(8.0)  # 1 GPU from 02:00 to its limit at 10:00
    review_config = replace(demo_config(), reclaim=config.reclaim)
    review = build_review(demo_outputs(), review_config, reclaimed=month_lines(wh, at(0), at(24 * 60)))
    section = render_markdown(review, "en").split("## Reclaimed this month")[1].split("\n## ")[0]
    # Notebooks 1, 4 and 5 (idle from T0; 4's host goes silent only at 03:00) and training job 3 (30 minutes'
    # grace): four warnings and four shadow actions; only notebook 1 has a time limit to give back.
    assert "Shadow-mode policies would have warned 4 times and taken 4 actions, giving back 8.0 GPU-hours" in section
    assert "| Interactive | NLP | 0 | 0 | 0.0 GPU-hours | 3 | 3 | 8.0 GPU-hours | 0 | 0 |" in section


def _capped(tmp_path: Path, *, paused: bool = False) -> Config:
    path = tmp_path / ("capped-paused.toml" if paused else "capped.toml")
    head = "[reclaim]\nmax_actions_per_hour = 1\n" + ("paused = true\n" if paused else "")
    path.write_text(BASE_TOML.replace("TZ", "UTC") + POLICIES.replace("[reclaim]\n", head), encoding="utf-8")
    return load_config(path)


def _action_of(wh: Warehouse, job_id: str) -> dict[str, object]:
    return decisions(wh).filter((pl.col("kind") == "action") & (pl.col("job_id") == job_id)).row(0, named=True)


def test_an_approved_action_waits_for_the_kill_switch_and_the_hourly_cap(wh: Warehouse, tmp_path: Path) -> None:
    config, paused = _capped(tmp_path), _capped(tmp_path, paused=True)
    scheduler = FakeScheduler()
    job = Reclaim(config, wh, lambda _cluster: scheduler)
    job.run(at(240))  # warnings: notebooks 1 and 5, training job 3
    _advance(wh, 240, 31)
    job.run(at(271))  # training job 3's requeue waits for an approver
    _advance(wh, 271, 30)
    job.run(at(301))  # the notebooks' cancels fall due; the cap (1 an hour) lets one go: notebook 1
    assert [c.job_id for c in scheduler.calls] == ["1"]
    requeue = str(_action_of(wh, "3")["decision_id"])
    control.record(wh, "alice", "reclaim.approve", requeue, at=at(302))
    Reclaim(paused, wh, lambda _cluster: scheduler).run(at(302))  # the kill switch holds the approved requeue
    job.run(at(302))  # so does the cap: notebook 1 was cancelled at 05:01
    assert [c.job_id for c in scheduler.calls] == ["1"]
    held = _action_of(wh, "3")
    assert (held["state"], held["acted_at"]) == ("pending", None)
    assert held["outcome"] == "waiting: the per-hour cap: 1 of 1 actions sent in cluster east"
    _advance(wh, 301, 61)
    job.run(at(362))  # an hour on, still idle: the approved requeue goes first (notebook 5's cancel waits)
    assert [c.job_id for c in scheduler.calls] == ["1", "3"]
    assert (_action_of(wh, "3")["state"], _action_of(wh, "3")["decided_by"]) == ("done", "alice")
    assert _action_of(wh, "5")["state"] == "pending"


def test_an_approved_action_is_dropped_when_the_job_is_busy_again_and_warned_anew(
    wh: Warehouse, tmp_path: Path
) -> None:
    config = _config(tmp_path)
    scheduler = FakeScheduler()
    job = Reclaim(config, wh, lambda _cluster: scheduler)
    job.run(at(240))
    _advance(wh, 240, 31)
    job.run(at(271))
    requeue = str(_action_of(wh, "3")["decision_id"])
    # Before anyone approves, the owner resumes training: job 3 is busy from 04:31 to 04:40.
    wh.ingest("test", {"gpu_minutes": _minutes(3, [BUSY] * 10, host="h3", start=271)})
    control.record(wh, "alice", "reclaim.approve", requeue, at=at(281))
    job.run(at(281))
    assert [c.job_id for c in scheduler.calls] == []
    dropped = _action_of(wh, "3")
    assert (dropped["state"], dropped["outcome"]) == ("stale", "left alone now: busy")
    assert dropped["gpu_hours_recovered"] == 0.0
    # Idle again from 04:41: its new stretch is warned anew an hour later, and its requeue waits for approval.
    wh.ingest("test", {"gpu_minutes": _minutes(3, [IDLE] * 90, host="h3", start=281)})
    job.run(at(371))
    lines = decisions(wh).filter(pl.col("job_id") == "3").sort("decided_at")
    assert lines.select("kind", "state", "decided_at").rows() == [
        ("warning", "sent", at(240)), ("action", "stale", at(271)), ("warning", "sent", at(371))]
