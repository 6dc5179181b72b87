"""Identity from a trusted authenticating proxy's header (issue 22, part 3): believed only when configured
and only from a trusted proxy's address; the user's role comes from the config, never from the request;
the header from any other peer is refused, and nothing is recorded for a refused request.

The API runs on 127.0.0.1; requests come from 127.0.0.1 (the trusted proxy) or from 127.0.0.2, another
loopback address that is not trusted here, so both peers are real connections to the same server."""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterator

import httpx
import pytest

from gpusteward.config import load_config_text
from gpusteward.config.service import ProxyIdentityConfig
from gpusteward.errors import ConfigError
from service.api_identity import ProxyIdentity
from service.api_tokens import TokenEntry, Tokens, digest
from tests.service.api_rig import ServedApi, served_api

APPROVE = "/api/v1/plans/p-1/approve"
SILENCE = "/api/v1/alerts/0123456789abcdef/silence"
PROXY = ProxyIdentity.from_config(ProxyIdentityConfig(
    user_header="X-Forwarded-User",
    groups_header="X-Forwarded-Groups",
    trusted_proxies=["127.0.0.1/32"],
    roles={"alice": "approver", "olga": "operator", "group:gpu-admins": "admin", "group:oncall": "operator"},
))
TOKENS = Tokens(entries=[TokenEntry("dashboard", "operator", digest("dash-token")),
                         TokenEntry("carol", "admin", digest("carol-token"))])


@pytest.fixture(scope="module")
def api() -> Iterator[ServedApi]:
    with served_api(TOKENS, ready=True, proxy=PROXY) as served:
        yield served


def _post(api: ServedApi, path: str, headers: dict[str, str], *, peer: str = "127.0.0.1",
          body: dict[str, object] | None = None) -> httpx.Response:
    with httpx.Client(transport=httpx.HTTPTransport(local_address=peer), timeout=10) as client:
        return client.post(api.url + path, json=body if body is not None else {"reason": "r"}, headers=headers)


def _acted(api: ServedApi) -> list[tuple[str, str]]:
    return [(r.actor, r.action) for r in api.controller.acted]


def test_a_trusted_proxy_names_the_user_and_the_config_gives_the_role(api: ServedApi) -> None:
    api.controller.acted.clear()
    answer = _post(api, APPROVE, {"X-Forwarded-User": "alice"})
    assert answer.status_code == 200, answer.text
    assert _acted(api) == [("alice", "plan.approve")]
    # olga is an operator in the config: she may silence, not approve; whatever else the request says.
    refused = _post(api, APPROVE, {"X-Forwarded-User": "olga", "X-Role": "admin", "X-Forwarded-Role": "admin"})
    assert refused.status_code == 403
    assert "olga has the operator role; plan.approve needs approver" in refused.json()["error"]
    assert _post(api, SILENCE, {"X-Forwarded-User": "olga"}, body={"minutes": 30}).status_code == 200
    assert _acted(api) == [("alice", "plan.approve"), ("olga", "alert.silence")]
    assert [r.via for r in api.controller.acted] == [None, None]  # the proxy's header alone: no token relayed


def test_groups_map_to_roles_and_the_highest_applies(api: ServedApi) -> None:
    api.controller.acted.clear()
    headers = {"X-Forwarded-User": "dan", "X-Forwarded-Groups": "staff, oncall,gpu-admins"}
    assert _post(api, APPROVE, headers).status_code == 200
    oncall_only = _post(api, APPROVE, {"X-Forwarded-User": "erin", "X-Forwarded-Groups": "oncall"})
    assert oncall_only.status_code == 403
    # A group the config does not name gives no role at all, so the user is refused, not made a viewer.
    stranger = _post(api, SILENCE, {"X-Forwarded-User": "mallory", "X-Forwarded-Groups": "admins"},
                     body={"minutes": 30})
    assert stranger.status_code == 403
    assert stranger.json() == {"error": "mallory (signed in at the proxy) has no role here: give the user or a group "
                                        "of theirs one in service.proxy.roles", "where": "header X-Forwarded-User"}
    assert _acted(api) == [("dan", "plan.approve")]


def test_the_header_from_an_untrusted_peer_is_refused_and_logged(api: ServedApi,
                                                                 caplog: pytest.LogCaptureFixture) -> None:
    api.controller.acted.clear()
    with caplog.at_level(logging.WARNING, logger="gpusteward.service.api"):
        for headers in ({"X-Forwarded-User": "alice"},
                        {"X-Forwarded-User": "alice", "Authorization": "Bearer carol-token"},
                        {"X-Forwarded-Groups": "gpu-admins", "Authorization": "Bearer carol-token"}):
            answer = _post(api, APPROVE, headers, peer="127.0.0.2")
            assert answer.status_code == 403, answer.text
            error = answer.json()
            assert "is only believed from a trusted proxy, and 127.0.0.2 is not one" in error["error"]
            assert error["where"].startswith("header X-Forwarded-")
    assert api.controller.acted == []
    assert "not a trusted proxy" in caplog.text
    # The same peer without the header is an ordinary token caller.
    assert _post(api, APPROVE, {"Authorization": "Bearer carol-token"}, peer="127.0.0.2").status_code == 200
    assert _acted(api) == [("carol", "plan.approve")]


def test_a_proxy_with_a_token_acts_for_the_user_with_no_more_than_the_token_allows(api: ServedApi) -> None:
    api.controller.acted.clear()
    # The dashboard's token is an operator's: alice (an approver) cannot approve through it ...
    through = _post(api, APPROVE, {"X-Forwarded-User": "alice", "Authorization": "Bearer dash-token"})
    assert through.status_code == 403
    assert "alice has the operator role (through dashboard's token)" in through.json()["error"]
    # ... but silences as herself, and the audit names her, not the dashboard.
    silenced = _post(api, SILENCE, {"X-Forwarded-User": "alice", "Authorization": "Bearer dash-token"},
                     body={"minutes": 30})
    assert silenced.status_code == 200
    assert silenced.json()["action"] == "alert.silence"
    assert _acted(api) == [("alice", "alert.silence")]
    assert [r.via for r in api.controller.acted] == ["dashboard"]  # the audit also names the relaying token
    wrong = _post(api, SILENCE, {"X-Forwarded-User": "alice", "Authorization": "Bearer guessed"}, body={"minutes": 30})
    assert wrong.status_code == 401


@pytest.mark.parametrize(("headers", "where"), [
    ({"X-Forwarded-User": ""}, "header X-Forwarded-User"),
    ({"X-Forwarded-User": "ali\tce"}, "header X-Forwarded-User"),
    ({"X-Forwarded-User": "a" * 257}, "header X-Forwarded-User"),
    ({"X-Forwarded-Groups": "gpu-admins"}, "header X-Forwarded-User"),
])
def test_a_user_header_that_names_nobody_is_refused(api: ServedApi, headers: dict[str, str], where: str) -> None:
    api.controller.acted.clear()
    answer = _post(api, APPROVE, headers)
    assert answer.status_code == 400, answer.text
    assert answer.json()["where"] == where
    assert api.controller.acted == []


def test_a_user_header_sent_twice_is_refused(api: ServedApi) -> None:
    api.controller.acted.clear()
    with httpx.Client(timeout=10) as client:
        answer = client.post(api.url + APPROVE, json={},
                             headers=[("X-Forwarded-User", "olga"), ("X-Forwarded-User", "alice")])
    assert answer.status_code == 400
    assert answer.json() == {"error": "X-Forwarded-User is sent 2 times; send it once",
                             "where": "header X-Forwarded-User"}
    assert api.controller.acted == []


def test_without_the_configured_header_the_proxy_header_means_nothing() -> None:
    with served_api(TOKENS, ready=True) as api:  # no proxy configured: tokens only
        alone = httpx.post(api.url + APPROVE, json={}, headers={"X-Forwarded-User": "alice"}, timeout=10)
        assert alone.status_code == 401
        assert alone.json()["where"] == "header Authorization"
        # A token caller's identity is the token's, whatever header rides along.
        ok = httpx.post(api.url + SILENCE, json={"minutes": 5}, timeout=10,
                        headers={"X-Forwarded-User": "alice", "Authorization": "Bearer dash-token"})
        assert ok.status_code == 200
        assert [r.actor for r in api.controller.acted] == ["dashboard"]


def test_loopback_is_trusted_by_default_and_ipv4_mapped_addresses_count() -> None:
    proxy = ProxyIdentity.from_config(ProxyIdentityConfig(user_header="X-Forwarded-User", roles={"a": "viewer"}))
    assert proxy is not None
    assert [proxy.trusts(a) for a in ("127.0.0.1", "::1", "::ffff:127.0.0.9")] == [True, True, True]
    assert [proxy.trusts(a) for a in ("10.0.0.5", None, "not-an-address", "::ffff:10.0.0.5")] == [False] * 4
    assert proxy.trusted == (ipaddress.ip_network("127.0.0.0/8"), ipaddress.ip_network("::1/128"))
    assert ProxyIdentity.from_config(ProxyIdentityConfig()) is None


@pytest.mark.parametrize(("table", "problem"), [
    ('user_header = "X Forwarded"\nroles = { a = "viewer" }', "service.proxy.user_header: 'X Forwarded' is not"),
    ('user_header = "X-User"\ntrusted_proxies = ["10.0.0.300"]\nroles = { a = "viewer" }',
     "service.proxy.trusted_proxies[0]: '10.0.0.300' is not an IP address or network"),
    ('user_header = "X-User"\nroles = { a = "root" }', "service.proxy.roles.a: expected one of 'viewer'"),
    ('user_header = "X-User"', "service.proxy.roles: give at least one user or group a role"),
    ('groups_header = "X-Groups"', "service.proxy.groups_header: set user_header too"),
])
def test_the_config_refuses_a_proxy_it_cannot_trust_safely(table: str, problem: str) -> None:
    with pytest.raises(ConfigError) as refused:
        load_config_text(f"[service.proxy]\n{table}\n")
    assert problem in str(refused.value)


def test_with_require_token_the_header_alone_is_not_believed() -> None:
    config = ProxyIdentityConfig(user_header="X-Forwarded-User", require_token=True, roles={"alice": "approver"})
    with served_api(TOKENS, ready=True, proxy=ProxyIdentity.from_config(config)) as api:
        alone = _post(api, APPROVE, {"X-Forwarded-User": "alice"})
        assert alone.status_code == 401
        assert alone.json() == {"error": "X-Forwarded-User is only believed beside the proxy's own bearer token "
                                         "(service.proxy.require_token)", "where": "header Authorization"}
        with_token = _post(api, SILENCE, {"X-Forwarded-User": "alice", "Authorization": "Bearer dash-token"},
                           body={"minutes": 30})
        assert with_token.status_code == 200
        assert _acted(api) == [("alice", "alert.silence")]
