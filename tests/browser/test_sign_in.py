"""The dashboard behind a sign-in proxy, in headless Chromium (issue 22, part 3): the request headers come
through a stand-in for the proxy (tests/browser/header_proxy.py). With --user-header the viewer is named in
the sidebar and an approval reaches the running control API as that person; without the header, or with
--team-header and no team, the page shows a refusal and nothing else."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from dashboards.texts import Texts
from gpusteward.config.service import ProxyIdentityConfig
from service.api_identity import ProxyIdentity
from service.api_tokens import TokenEntry, Tokens, digest
from service.dashboard import start_dashboard
from tests.browser.browsing import READY, TIMEOUT_MS, rendered
from tests.browser.chart_figures import TABLES
from tests.browser.conftest import Dashboard, stop_dashboard
from tests.browser.header_proxy import header_proxy
from tests.service.api_rig import served_api

USER = "X-Forwarded-User"
TEAM = "X-Gpusteward-Team"
REFUSED = '[data-testid="stAlertContentError"]'


@contextmanager
def _dashboard(dashboard: Dashboard, *args: str, api_url: str | None = None) -> Iterator[str]:
    process, url = start_dashboard(None, str(dashboard.root / "gpusteward.toml"),
                                   read_model=str(dashboard.root / "readmodel"), api_url=api_url, app_args=args)
    try:
        yield url.rstrip("/")
    finally:
        stop_dashboard(process)


@contextmanager
def _page(browser: Any, url: str, headers: dict[str, str]) -> Iterator[Any]:
    """A page of the dashboard through a proxy that adds `headers` to every request (none: still through
    the proxy, which then only drops those the browser sends)."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    with header_proxy(url, headers) as proxied:
        page = context.new_page()
        try:
            page.goto(proxied + "/", wait_until="domcontentloaded")
            page.wait_for_selector(READY, timeout=TIMEOUT_MS)
            yield page
        finally:
            context.close()


def _refused(page: Any, header: str) -> None:
    page.wait_for_selector(REFUSED, timeout=TIMEOUT_MS)
    text = page.locator(REFUSED).inner_text()
    assert "Refused" in text
    assert header in text
    assert page.get_by_test_id("stSidebarNavLink").count() == 0  # no pages
    assert page.locator(TABLES).count() == 0  # no data
    assert page.get_by_role("button").filter(has_text="Approve").count() == 0


def test_the_viewer_signed_in_at_the_proxy_approves_as_themselves(browser: Any, dashboard: Dashboard,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    from playwright.sync_api import expect

    monkeypatch.setenv("GPUSTEWARD_DASHBOARD_TOKEN", "dash-token")  # the dashboard process inherits it
    proxy = ProxyIdentity.from_config(ProxyIdentityConfig(user_header=USER, roles={"alice": "approver"}))
    tokens = Tokens(entries=[TokenEntry("dashboard", "approver", digest("dash-token"))])
    tx = Texts("en")
    with served_api(tokens, ready=True, proxy=proxy) as api, _dashboard(dashboard, "--user-header", USER,
                                                                        api_url=api.url) as url:
        with _page(browser, url, {}) as anonymous:
            _refused(anonymous, USER)
        with _page(browser, url, {USER: "alice"}) as page:
            rendered(page)
            expect(page.get_by_test_id("stSidebar").get_by_text("Signed in as alice.")).to_be_visible(
                timeout=TIMEOUT_MS)
            page.get_by_test_id("stSidebarNavLink").filter(has_text=tx("nav.plans")).first.click()
            rendered(page)
            page.get_by_role("button", name=tx("plans.approve")).click()
            page.wait_for_selector('[data-testid="stAlertContentSuccess"], [data-testid="stAlertContentWarning"]',
                                   timeout=TIMEOUT_MS)
            assert page.locator('[data-testid="stAlertContentSuccess"]').count() == 1, page.locator(
                '[data-testid="stAlertContentWarning"]').all_inner_texts()
    plan_id = dashboard.month.plans["plan_id"][0]
    assert [(r.actor, r.action, r.target) for r in api.controller.acted] == [("alice", "plan.approve", plan_id)]


def test_a_team_view_without_the_team_header_is_refused(browser: Any, dashboard: Dashboard) -> None:
    from playwright.sync_api import expect

    with _dashboard(dashboard, "--team-header", TEAM) as url:
        with _page(browser, url, {}) as anonymous:
            _refused(anonymous, TEAM)
        with _page(browser, url, {TEAM: "nlp"}) as page:
            rendered(page)
            expect(page.get_by_test_id("stSidebar").get_by_text("Showing team", exact=False).first).to_be_visible(
                timeout=TIMEOUT_MS)
            assert page.locator(REFUSED).count() == 0
