"""The dashboard acts as its viewer (issue 22, part 3): the sign-in proxy's user header is forwarded with
each action, so the running control API's audit names the person; a configured sign-in header that is
missing, repeated or empty refuses the request (an error, no data, no buttons) instead of failing open."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from streamlit.testing.v1 import AppTest

from dashboards.app import SCREENS
from dashboards.identity import Refusal, SignIn, Viewer, viewer_from_headers
from gpusteward.config.service import ProxyIdentityConfig
from service.api_identity import ProxyIdentity
from service.api_tokens import TokenEntry, Tokens, digest
from tests.dashboards.shown import tables
from tests.dashboards.test_pages import _app
from tests.service.api_rig import ServedApi, served_api

PROXY = ProxyIdentity.from_config(ProxyIdentityConfig(
    user_header="X-Forwarded-User", groups_header="X-Forwarded-Groups",
    roles={"alice": "approver", "group:sre": "operator"},
))


def _shows_nothing(at: AppTest) -> None:
    assert not at.exception, [e.value for e in at.exception]
    assert not tables(at)
    assert not at.button
    assert not at.sidebar.multiselect  # not even the filters, which list the teams


@pytest.mark.parametrize(("state", "error"), [
    ({"_team_header": True}, "names the viewer's team in the X-Gpusteward-Team header, and this request has none"),
    ({"_user_header": "X-Forwarded-User"},
     "names the viewer in the X-Forwarded-User header, and this request has none"),
    ({"_user_header": "X-Forwarded-User", "_headers": [("X-Forwarded-User", "alice"), ("X-Forwarded-User", "bob")]},
     "the X-Forwarded-User header arrived 2 times"),
    ({"_user_header": "X-Forwarded-User", "_headers": [("X-Forwarded-User", " ")]},
     "the X-Forwarded-User header is empty or not printable text"),
])
def test_a_request_the_sign_in_headers_refuse_sees_nothing(state: dict[str, object], error: str) -> None:
    at = _app(lang="en", _api="http://127.0.0.1:9", _token="t", **state)
    assert len(at.error) == 1
    assert error in at.error[0].value
    _shows_nothing(at)


def test_the_refusal_is_in_the_viewers_language() -> None:
    at = _app(lang="zh", _team_header=True)
    assert "已拒绝" in at.error[0].value
    assert "访问者所属的团队" in at.error[0].value
    _shows_nothing(at)


def test_without_sign_in_headers_configured_the_dashboard_opens_as_before() -> None:
    at = _app(lang="en", _headers=[("X-Forwarded-User", "mallory")])
    assert not at.error
    assert at.sidebar.multiselect(key="f_teams") is not None
    assert "Signed in as" not in "\n".join(c.value for c in at.sidebar.caption)


def test_sign_in_headers_are_read_case_insensitively_and_forwarded() -> None:
    sign_in = SignIn("X-Forwarded-User", "X-Forwarded-Groups", None)
    viewer = viewer_from_headers({"x-forwarded-user": "alice", "X-FORWARDED-GROUPS": "sre,ml"}, sign_in)
    assert viewer == Viewer("alice", "sre,ml", None)
    assert viewer.forwarded(sign_in) == {"X-Forwarded-User": "alice", "X-Forwarded-Groups": "sre,ml"}
    assert Viewer("alice").forwarded(sign_in) == {"X-Forwarded-User": "alice"}
    assert isinstance(viewer_from_headers({}, SignIn(team_header="X-Team")), Refusal)
    assert viewer_from_headers({}, SignIn(groups_header="X-Forwarded-Groups")) == Viewer()  # groups are optional


@pytest.fixture
def api() -> Iterator[ServedApi]:
    # The dashboard's own token is an approver's: it can lend no more than that to its viewers.
    tokens = Tokens(entries=[TokenEntry("dashboard", "approver", digest("dash-token"))])
    with served_api(tokens, ready=True, proxy=PROXY) as served:
        yield served


def _signed_in(api: ServedApi, user: str, groups: str | None = None, *, token: str | None = "dash-token") -> AppTest:
    headers = [("X-Forwarded-User", user), *([("X-Forwarded-Groups", groups)] if groups else [])]
    at = _app(lang="en", _api=api.url, _user_header="X-Forwarded-User", _groups_header="X-Forwarded-Groups",
              _headers=headers, **({"_token": token} if token else {}))
    assert not at.exception, [e.value for e in at.exception]
    assert f"Signed in as {user}." in "\n".join(c.value for c in at.sidebar.caption)
    return at


def test_an_approval_from_the_dashboard_is_audited_as_the_viewer(api: ServedApi) -> None:
    at = _signed_in(api, "alice")
    at.switch_page(str(SCREENS / "plans.py")).run()
    at.text_input(key="plan_reason").set_value("fits the Q4 budget").run()
    at.button(key="approve").click().run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.success, [w.body for w in at.warning]
    assert [(r.actor, r.action, r.target) for r in api.controller.acted] == [
        ("alice", "plan.approve", "2026-11-abc123")]


def test_a_viewer_the_service_gives_a_lower_role_is_refused_by_the_service(api: ServedApi) -> None:
    # sre members are operators in the service's config: they may silence, not approve, whatever the dashboard shows.
    at = _signed_in(api, "sam", "sre")
    at.switch_page(str(SCREENS / "plans.py")).run()
    at.button(key="approve").click().run()
    assert "403" in at.warning[0].body
    assert "sam has the operator role" in at.warning[0].body
    at.switch_page(str(SCREENS / "alerts.py")).run()
    at.button(key="silence").click().run()
    assert at.success, [w.body for w in at.warning]
    assert [(r.actor, r.action) for r in api.controller.acted] == [("sam", "alert.silence")]


def test_without_a_token_the_dashboard_acts_through_the_trusted_header_alone(api: ServedApi) -> None:
    at = _signed_in(api, "alice", token=None)
    at.switch_page(str(SCREENS / "alerts.py")).run()
    at.button(key="acknowledge").click().run()
    assert at.success, [w.body for w in at.warning]
    assert [(r.actor, r.action) for r in api.controller.acted] == [("alice", "alert.acknowledge")]
