"""Roles and per-person tokens (issue 22): each token has an identity and a role, and an action the role
does not allow is refused with 403 before its body is read, so nothing is recorded; tokens are made
and revoked with `gpusteward api-token`, stored hashed, and a revoked token is refused from the next
request of a running service."""

from __future__ import annotations

import logging
import stat
from pathlib import Path

import httpx
import pytest
from click.testing import CliRunner

from service.api_tokens import ALLOWED, ROLES, Role, TokenEntry, Tokens, digest, load_tokens
from service.cli import cli
from tests.service.api_rig import served_api
from tests.service.test_api_hostile import exchange
from warehouse.control import ACTIONS, Action

REQUESTS: dict[Action, tuple[str, dict[str, object]]] = {
    "plan.approve": ("/api/v1/plans/p-1/approve", {"reason": "r"}),
    "plan.reject": ("/api/v1/plans/p-1/reject", {"reason": "r"}),
    "alert.silence": ("/api/v1/alerts/0123456789abcdef/silence", {"minutes": 30}),
    "alert.acknowledge": ("/api/v1/alerts/0123456789abcdef/acknowledge", {}),
    "review.trigger": ("/api/v1/reviews", {"month": "2026-10"}),
    "import.retry": ("/api/v1/quarantine/retry", {"path": "/in/x.om"}),
    "reclaim.exempt": ("/api/v1/reclaim/jobs/east/42/exempt", {"minutes": 60, "reason": "demo tomorrow"}),
    "reclaim.approve": ("/api/v1/reclaim/actions/" + "ab" * 16 + "/approve", {}),
    "reclaim.reject": ("/api/v1/reclaim/actions/" + "ab" * 16 + "/reject", {"reason": "still needed"}),
}
EXPECTED: dict[Role, set[Action]] = {
    "viewer": set(),
    "operator": {"alert.silence", "alert.acknowledge", "review.trigger", "import.retry", "reclaim.exempt"},
    "approver": {"alert.silence", "alert.acknowledge", "review.trigger", "import.retry", "reclaim.exempt",
                 "plan.approve", "plan.reject", "reclaim.approve", "reclaim.reject"},
    "admin": set(ACTIONS),
}


def test_the_role_table_is_the_documented_one() -> None:
    assert {role: set(ALLOWED[role]) for role in ROLES} == EXPECTED
    assert set(REQUESTS) == set(ACTIONS)


@pytest.mark.parametrize("role", ROLES)
def test_each_role_may_do_what_it_allows_and_nothing_else(role: Role) -> None:
    token = f"token-of-a-{role}"
    tokens = Tokens(entries=[TokenEntry(f"pat-{role}", role, digest(token))])
    with served_api(tokens, ready=True) as api:
        for action, (path, body) in REQUESTS.items():
            response = httpx.post(api.url + path, json=body, headers={"Authorization": f"Bearer {token}"},
                                  timeout=10)
            if action in EXPECTED[role]:
                assert response.status_code in {200, 202}, (action, response.text)
            else:
                assert response.status_code == 403, (action, response.text)
                answer = response.json()
                assert answer["where"] == "header Authorization"
                assert f"pat-{role} has the {role} role" in answer["error"]
        assert httpx.get(f"{api.url}/metrics", timeout=10).status_code == 200
        assert {r.action for r in api.controller.acted} == EXPECTED[role]
        assert {r.actor for r in api.controller.acted} <= {f"pat-{role}"}


def test_a_403_is_answered_before_the_body_is_read() -> None:
    tokens = Tokens(entries=[TokenEntry("vic", "viewer", digest("v-token"))])
    with served_api(tokens, read_timeout_s=5) as api:
        # The body never comes: the refusal does not wait for it (the 408 would take 5 s and say "body").
        head = (b"POST /api/v1/plans/p-1/approve HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer v-token\r\n"
                b"Content-Length: 100\r\nConnection: close\r\n\r\n{")
        answer = exchange(api, head, timeout=4)
        assert answer.startswith(b"HTTP/1.1 403 ")
        assert api.controller.acted == []


def _cli(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, ["api-token", *args])
    return result.exit_code, result.stdout, result.stderr


def test_tokens_are_created_hashed_listed_and_revoked_while_the_service_runs(tmp_path: Path) -> None:
    path = tmp_path / "tokens"
    code, alice_token, note = _cli("create", "alice", "--role", "approver", "--file", str(path))
    assert code == 0, note
    alice_token = alice_token.strip()
    assert alice_token.startswith("gst_")
    assert "alice (approver)" in note
    assert alice_token not in path.read_text(encoding="utf-8")  # only its hash is stored
    assert digest(alice_token) in path.read_text(encoding="utf-8")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert _cli("create", "bob", "--role", "operator", "--file", str(path))[0] == 0
    code, listed, _ = _cli("list", "--file", str(path))
    assert listed.splitlines() == ["alice\tapprover", "bob\toperator"]
    assert digest(alice_token) not in listed

    tokens = load_tokens([path], env={})
    with served_api(tokens) as api:
        approve = f"{api.url}/api/v1/plans/p-1/approve"
        auth = {"Authorization": f"Bearer {alice_token}"}
        assert httpx.post(approve, json={}, headers=auth, timeout=10).status_code == 200
        assert _cli("revoke", "alice", "--file", str(path))[0] == 0
        assert httpx.post(approve, json={}, headers=auth, timeout=10).status_code == 401  # no restart needed
        assert [r.actor for r in api.controller.acted] == ["alice"]
    assert _cli("list", "--file", str(path))[1].splitlines() == ["bob\toperator"]
    code, _, error = _cli("revoke", "alice", "--file", str(path))
    assert code == 1
    assert "no token of alice" in error


@pytest.mark.parametrize("identity", ["a:b", "two words", "x,y", ""])
def test_an_identity_that_cannot_be_stored_is_refused(identity: str, tmp_path: Path) -> None:
    code, _, error = _cli("create", identity, "--role", "viewer", "--file", str(tmp_path / "t"))
    assert code == 2
    assert "identity" in error
    assert not (tmp_path / "t").exists()


def test_a_token_file_broken_while_running_refuses_everyone(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    path = tmp_path / "tokens"
    path.write_text(f"carol:admin:sha256:{digest('c-token')}\n", encoding="utf-8")
    tokens = load_tokens([path], env={})
    assert tokens.identify("Bearer c-token") == "carol"
    path.write_text(f"carol:root:sha256:{digest('c-token')}\n", encoding="utf-8")  # no such role
    with caplog.at_level(logging.ERROR):
        assert tokens.identify("Bearer c-token") is None
    assert "cannot be read" in caplog.text
    assert "c-token" not in caplog.text


def test_plain_entries_keep_working_as_admins() -> None:
    tokens = load_tokens([], env={"GPUSTEWARD_API_TOKENS": "dave:dave-token"})
    caller = tokens.caller("Bearer dave-token")
    assert caller is not None
    assert (caller.identity, caller.role) == ("dave", "admin")
