"""Every page in both languages, in headless Chromium: no Streamlit error element, the figures it
shows equal the warehouse's (tests/browser/figures.py), a screenshot each."""

from __future__ import annotations

from typing import Any

import pytest

from dashboards.app import PAGES
from dashboards.texts import Texts
from reports.locale import Lang
from tests.browser.conftest import Dashboard, keep_copy
from tests.browser.figures import CHECKS

READY = ('[data-testid="stApp"][data-test-script-state="notRunning"]'
         '[data-test-connection-state="CONNECTED"]')
ERRORS = '[data-testid="stException"], [data-testid="stAlertContentError"]'
TIMEOUT_MS = 30_000
TITLE_KEYS = {"overview": "page.title", "idle": "idle_page.title"}


def _rendered(page: Any) -> None:
    from playwright.sync_api import expect

    page.wait_for_selector(READY, timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=TIMEOUT_MS)
    expect(page.locator('[data-testid="stSkeleton"], [data-testid="stAppSkeleton"]')).to_have_count(
        0, timeout=TIMEOUT_MS)
    for chart in page.get_by_test_id("stVegaLiteChart").all():
        chart.locator("canvas, svg").first.wait_for(state="visible", timeout=TIMEOUT_MS)
    page.evaluate("document.fonts.ready")


def _no_errors(page: Any, where: str) -> None:
    errors = page.locator(ERRORS)
    assert errors.count() == 0, (where, [e.inner_text()[:500] for e in errors.all()])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_page_renders_without_errors(browser: Any, dashboard: Dashboard, lang: Lang) -> None:
    from playwright.sync_api import expect

    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN" if lang == "zh" else "en")
    page = context.new_page()
    try:
        page.goto(dashboard.url + "/", wait_until="domcontentloaded")
        _rendered(page)
        tx = Texts(lang)
        if lang == "zh":
            page.get_by_test_id("stSidebar").get_by_text("中文").click()
        checked: dict[str, int] = {}
        for name in PAGES:
            title = tx(TITLE_KEYS.get(name, f"{name}.title"), month=tx.fmt.month(_month()))
            page.get_by_test_id("stSidebarNavLink").filter(has_text=tx(f"nav.{name}")).first.click()
            expect(page.get_by_role("heading", name=title).first).to_be_visible(timeout=TIMEOUT_MS)
            _rendered(page)
            _no_errors(page, f"{lang}/{name}")
            checked[name] = CHECKS[name](page, dashboard.month, tx)
            shot = dashboard.shots / f"{name}.{lang}.png"
            page.screenshot(path=shot, full_page=True)
            keep_copy(shot)
        # Every page with data showed figures that were checked; preemption has none in these two days.
        assert [n for n, count in checked.items() if count == 0] == ["preemption"], checked
    finally:
        context.close()


def _month() -> Any:
    from gpusteward.domain import Month

    return Month(2026, 10)
