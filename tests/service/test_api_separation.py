"""Separation of duties (issue 22, part 3) against the running service: with `service.separation_of_duties`
whoever proposed a plan cannot approve it through the API, the refusal is audited, and another approver
can; without the switch the proposer may. The CLI takes the identity from the OS account (or, with
--api, from the token), never from --by, when the switch is on."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from gpusteward.config import load_config
from gpusteward.domain import Month
from gpusteward.tables import JOBS, QUOTA_SNAPSHOTS
from service.api_tokens import digest
from service.cli import cli
from service.cli_quota import _login
from service.pipeline import evaluate
from service.serve import ServeSettings, Service
from tests.service.test_cli_quota import CONFIG as QUOTA_CONFIG
from tests.sla.builders import T0, frame, job
from warehouse import control, open_warehouse
from warehouse.quota_store import plan_body

CONFIG = QUOTA_CONFIG + "\n[service]\nseparation_of_duties = SEPARATION\n"
TOKENS = ",".join(f"{who}:approver:sha256:{digest(f'{who}-token')}" for who in ("alice", "bob", "dashboard"))
PROXY = '\n[service.proxy]\nuser_header = "X-Forwarded-User"\nroles = { alice = "approver", carol = "approver" }\n'


def _month_with_a_plan(root: Path, *, separation: bool, proposer: str, extra: str = "") -> tuple[Path, str]:
    """A config, and a warehouse whose March plan `proposer` proposed (as `gpusteward quota plan` does)."""
    root.mkdir(parents=True, exist_ok=True)
    path = root / "gpusteward.toml"
    path.write_text(CONFIG.replace("SEPARATION", str(separation).lower()) + extra, encoding="utf-8")
    config = load_config(path)
    jobs = [job(n, submit=0, start=0 if n < 5 else 60, end=60 if n < 5 else 120) for n in range(1, 6)]
    quotas = [{"cluster": "east", "ts": T0, "kind": "account", "name": "nlp", "gpu_limit": 4}]
    with open_warehouse(config.resolve(config.warehouse.path)) as wh:
        wh.ingest("test", {"jobs": frame(jobs, JOBS), "quota_snapshots": frame(quotas, QUOTA_SNAPSHOTS)})
        evaluate(wh, config, Month(2026, 3), proposed_by=proposer)
        plan_id = str(wh.plans().row(-1, named=True)["plan_id"])
    return path, plan_id


@dataclass
class Running:
    service: Service
    thread: threading.Thread
    plan_id: str
    config_path: Path

    def post(self, who: str, verb: str, body: dict[str, object], *, for_user: str | None = None) -> httpx.Response:
        """`who`'s token; with `for_user`, the token relays for that person as a sign-in proxy does."""
        assert self.service.url is not None
        headers = {"Authorization": f"Bearer {who}-token"} | ({"X-Forwarded-User": for_user} if for_user else {})
        return httpx.post(f"{self.service.url}/api/v1/plans/{self.plan_id}/{verb}", json=body, timeout=60,
                          headers=headers)


def _start(root: Path, *, separation: bool, extra: str = "") -> Running:
    config_path, plan_id = _month_with_a_plan(root, separation=separation, proposer="alice", extra=extra)
    settings = ServeSettings(read_model=root / "readmodel", port=0)
    service = Service(load_config(config_path), settings, env={"GPUSTEWARD_API_TOKENS": TOKENS})
    thread = threading.Thread(target=service.run, name="service-separation", daemon=True)
    thread.start()
    assert service.ready.wait(120), "the service never became ready"
    return Running(service, thread, plan_id, config_path)


def _stop(running: Running) -> None:
    running.service.stop.set()
    running.thread.join(timeout=60)
    assert not running.thread.is_alive()


@pytest.fixture
def separated(tmp_path: Path) -> Iterator[Running]:
    running = _start(tmp_path / "on", separation=True)
    try:
        yield running
    finally:
        _stop(running)


def test_the_proposer_cannot_approve_and_the_refusal_is_audited(separated: Running) -> None:
    refused = separated.post("alice", "approve", {"reason": "mine", "override": "accepted"})
    assert refused.status_code == 403
    assert refused.json()["error"] == (f"separation of duties: alice proposed plan {separated.plan_id!r}, so someone "
                                       "else must approve it (service.separation_of_duties)")
    approved = separated.post("bob", "approve", {"reason": "checked", "override": "accepted"})
    assert approved.status_code == 200, approved.text
    assert approved.json()["actor"] == "bob"
    _stop(separated)
    config = load_config(separated.config_path)
    with open_warehouse(config.resolve(config.warehouse.path), read_only=True) as wh:
        trail = control.actions(wh).select("actor", "action", "target").rows()
        decided = control.plan_decisions(wh).select("decided_by", "decision").rows()
        assert "alice" in plan_body(wh, separated.plan_id)["proposed_by"]  # type: ignore[index]
    assert trail == [("alice", "plan.approve.refused", separated.plan_id), ("bob", "plan.approve", separated.plan_id)]
    assert decided == [("bob", "approved")]  # the refusal is audited, never a decision


def test_a_relayed_action_is_audited_with_the_person_and_the_relaying_token(tmp_path: Path) -> None:
    """The dashboard's token acting for alice, then for carol: each audit row names the person as the
    actor and the dashboard's token as `via`; a person's own token leaves `via` empty."""
    running = _start(tmp_path / "relay", separation=True, extra=PROXY)
    try:
        refused = running.post("dashboard", "approve", {"override": "accepted"}, for_user="alice")
        assert refused.status_code == 403, refused.text  # alice proposed it: separation holds through a relay
        approved = running.post("dashboard", "approve", {"override": "accepted"}, for_user="carol")
        assert approved.status_code == 200, approved.text
        assert (approved.json()["actor"], approved.json()["via"]) == ("carol", "dashboard")
        assert running.post("bob", "reject", {}).status_code == 409  # already decided; nothing recorded
    finally:
        _stop(running)
    config = load_config(running.config_path)
    with open_warehouse(config.resolve(config.warehouse.path), read_only=True) as wh:
        trail = control.actions(wh).select("actor", "via", "action").rows()
    assert trail == [("alice", "dashboard", "plan.approve.refused"), ("carol", "dashboard", "plan.approve")]


def test_without_the_switch_the_proposer_may_approve(tmp_path: Path) -> None:
    running = _start(tmp_path / "off", separation=False)
    try:
        approved = running.post("alice", "approve", {"reason": "mine", "override": "accepted"})
        assert approved.status_code == 200, approved.text
        assert approved.json()["actor"] == "alice"
    finally:
        _stop(running)


def test_the_cli_approves_as_the_os_account_and_refuses_another_name(tmp_path: Path) -> None:
    me = _login()
    config_path, plan_id = _month_with_a_plan(tmp_path, separation=True, proposer=me)
    base = ["quota", "approve", plan_id, "--config", str(config_path), "--override", "accepted"]
    runner = CliRunner()
    # --by (or $GPUSTEWARD_USER, or $USER) naming someone else does not make the proposer someone else.
    claims: list[tuple[list[str], dict[str, str]]] = [
        (["--by", "bob"], {}), ([], {"GPUSTEWARD_USER": "bob"}), ([], {"USER": "bob", "LOGNAME": "bob"})]
    for extra, env in claims:
        result = runner.invoke(cli, [*base, *extra], env=env)
        assert result.exit_code != 0, result.output
        if extra or "GPUSTEWARD_USER" in env:
            assert f"this command acts as {me}, the account running it, and cannot act as bob" in result.output
        else:
            assert f"separation of duties: {me} proposed plan" in result.output
    config = load_config(config_path)
    with open_warehouse(config.resolve(config.warehouse.path), read_only=True) as wh:
        trail = control.actions(wh).select("actor", "action").rows()
    assert trail == [(me, "plan.approve.refused")]


def test_the_cli_through_the_api_decides_as_the_token_owner(separated: Running) -> None:
    assert separated.service.url is not None
    base = ["quota", "approve", separated.plan_id, "--api", separated.service.url, "--override", "accepted"]
    runner = CliRunner()
    named = runner.invoke(cli, [*base, "--by", "bob"], env={"GPUSTEWARD_API_TOKEN": "alice-token"})
    assert named.exit_code == 2
    assert "--by is not taken with --api" in named.output
    refused = runner.invoke(cli, base, env={"GPUSTEWARD_API_TOKEN": "alice-token"})
    assert refused.exit_code == 1
    assert "403: separation of duties: alice proposed plan" in refused.output
    approved = runner.invoke(cli, base, env={"GPUSTEWARD_API_TOKEN": "bob-token"})
    assert approved.exit_code == 0, approved.output
    assert '"by": "bob"' in approved.output
    missing = runner.invoke(cli, base, env={"GPUSTEWARD_API_TOKEN": ""})
    assert missing.exit_code == 2
    assert "GPUSTEWARD_API_TOKEN" in missing.output
