"""Every dashboard page in both languages, in headless Chromium at 1,400 px: no Streamlit error element,
the figures it shows equal the warehouse's (tests/browser/figures.py), and its screenshot matches the
reference image (tests/browser/shots.py). The pages come from dashboards.app.PAGES, so a page added
there is visited too (and fails until it has a figure check and a reference).

One tab per language, reused from page to page as a reader would click through the sidebar."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from dashboards.texts import Texts
from reports.locale import LANGS, Lang
from tests.browser.browsing import READY, TIMEOUT_MS, Tabs, go_to, no_errors, rendered
from tests.browser.conftest import Dashboard
from tests.browser.figures import Visit, dashboard_pages, visits_for
from tests.browser.shots import assert_like_reference, capture, keep_copy

__all__ = ["READY", "TIMEOUT_MS", "_no_errors", "_rendered"]  # the names other browser tests import from here
_rendered = rendered
_no_errors = no_errors

CASES = [(lang, visit) for lang in LANGS for visit in visits_for(dashboard_pages())]


@pytest.fixture(scope="module")
def tabs(browser: Any, dashboard: Dashboard) -> Iterator[Tabs]:
    opened = Tabs(browser, dashboard.url)
    try:
        yield opened
    finally:
        opened.close()


@pytest.mark.parametrize(("lang", "visit"), CASES, ids=[f"{lang}-{visit.name}" for lang, visit in CASES])
def test_page_shows_the_warehouses_figures_and_matches_its_reference(
    tabs: Tabs, dashboard: Dashboard, lang: Lang, visit: Visit
) -> None:
    assert visit.registered, (f"the dashboard page {visit.page!r} has no figure check: add a Visit for it "
                              "(tests/browser/figures.py says how)")
    page = tabs.page(lang)
    where = f"{lang}/{visit.name}"
    tx = Texts(lang, dashboard.month.config.timezone)
    go_to(page, dashboard.url, visit, lang, dashboard.month)
    no_errors(page, where)
    shot = capture(page, dashboard.shots / f"{visit.name}.{lang}.png")
    keep_copy(shot)
    checked = visit.check(page, dashboard.month, tx)
    if visit.figures_expected:
        assert checked > 0, f"{where}: no figure was compared with the warehouse"
    assert_like_reference(shot)
