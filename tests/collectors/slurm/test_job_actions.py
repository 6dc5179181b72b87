"""Reclaim actions on Slurm jobs: state read first, so a retried action is idempotent; errors say what next.

slurmrestd is replaced by an httpx MockTransport answering as v0.0.38 does; the CLI by small scripts on
a PATH of their own that log their arguments. tests/realslurm/test_reclaim_real.py runs the real thing.
"""

from __future__ import annotations

import stat
from pathlib import Path

import httpx
import pytest

from collectors.reclaim_actions import ReclaimTarget
from collectors.slurm import SlurmCli, SlurmRest
from collectors.slurm.job_actions import SlurmJobActions
from gpusteward.errors import TransientError


def _rest(states: list[str | None], *, delete_status: int = 200) -> tuple[SlurmRest, list[str]]:
    """slurmrestd whose job 7 is in each of `states` at successive reads (None: it forgot the job)."""
    calls: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        calls.append(f"{request.method} {request.url.path}")
        if request.method == "DELETE":
            if delete_status != 200:
                return httpx.Response(delete_status, json={"errors": [{"error": "job not found", "errno": 2017}]})
            return httpx.Response(200, json={"errors": []})
        state = states.pop(0) if len(states) > 1 else states[0]
        if state is None:
            return httpx.Response(404, json={"errors": [{"error": "Invalid job id specified", "errno": 2017}]})
        return httpx.Response(200, json={"errors": [], "jobs": [{"job_id": 7, "job_state": state}]})

    return SlurmRest(transport=httpx.MockTransport(answer)), calls


def test_a_running_job_is_cancelled_through_slurmrestd() -> None:
    rest, calls = _rest(["RUNNING"])
    result = SlurmJobActions(rest=rest).act(ReclaimTarget("east", "7", "cancel"))
    assert (result.state, result.transport) == ("done", "slurmrestd")
    assert calls == ["GET /slurm/v0.0.38/job/7", "DELETE /slurm/v0.0.38/job/7"]


@pytest.mark.parametrize("state", ["COMPLETED", "CANCELLED", None])
def test_a_retried_cancel_of_an_ended_job_is_not_an_error(state: str | None) -> None:
    rest, calls = _rest([state])
    result = SlurmJobActions(rest=rest).act(ReclaimTarget("east", "7", "cancel"))
    assert result.state == "already_ended"
    assert calls == ["GET /slurm/v0.0.38/job/7"]  # nothing sent


def test_a_job_that_ends_while_it_is_cancelled_is_already_ended() -> None:
    rest, _ = _rest(["RUNNING", "COMPLETED"], delete_status=500)  # slurmrestd 22.05 answers 500 "job not found"
    assert SlurmJobActions(rest=rest).act(ReclaimTarget("east", "7", "cancel")).state == "already_ended"
    rest, _ = _rest(["RUNNING"], delete_status=500)  # still running: try again later
    with pytest.raises(TransientError, match="cancel of job 7"):
        SlurmJobActions(rest=rest).act(ReclaimTarget("east", "7", "cancel"))


def _cli(tmp_path: Path, state: str, *, fail: str = "") -> tuple[SlurmCli, Path]:
    log = tmp_path / "calls.log"
    for name, body in (("squeue", f'echo "{state}"'), ("scontrol", fail or "true"), ("scancel", "true")):
        script = tmp_path / name
        script.write_text(f'#!/bin/sh\necho "{name} $*" >> {log}\n{body}\n', encoding="utf-8")
        script.chmod(script.stat().st_mode | stat.S_IEXEC)
    return SlurmCli(path=str(tmp_path)), log


def test_requeue_and_suspend_go_through_scontrol_once(tmp_path: Path) -> None:
    cli, log = _cli(tmp_path, "RUNNING")
    actions = SlurmJobActions(cli=cli, rest=_rest(["RUNNING"])[0])  # REST cannot requeue in v0.0.38
    requeued = actions.act(ReclaimTarget("east", "7", "requeue"))
    assert (requeued.state, requeued.transport) == ("done", "scontrol")
    assert "scontrol requeue 7" in log.read_text(encoding="utf-8")
    waiting, _ = _cli(tmp_path, "PENDING")
    again = SlurmJobActions(cli=waiting).act(ReclaimTarget("east", "7", "requeue"))  # the retry finds it waiting
    assert (again.state, again.detail) == ("done", "job 7 is PENDING already")
    assert log.read_text(encoding="utf-8").count("scontrol requeue") == 1


def test_a_refused_scontrol_is_retried_later_with_its_message(tmp_path: Path) -> None:
    cli, _ = _cli(tmp_path, "RUNNING", fail='echo "scontrol: error: Access/permission denied" >&2; exit 1')
    with pytest.raises(TransientError, match=r"suspend of job 7: .*Access/permission denied"):
        SlurmJobActions(cli=cli).act(ReclaimTarget("east", "7", "suspend"))
