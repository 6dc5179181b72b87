"""Driving the dashboard in headless Chromium: launch with fixed fonts, wait until a page is drawn, open a
page in a language. Shared by the browser tests, `python -m bench dashboard` and the docs' screenshots.

Fonts: Chromium finds system fonts through fontconfig, so the same page drew with other glyphs on a
machine with other fonts installed (or another `/etc/fonts/conf.d`). It is launched with a fontconfig
file of its own (FONTCONFIG_FILE) that names only DejaVu (Latin; fonts-dejavu-core, which fontconfig
itself depends on) and Noto CJK (fonts-noto-cjk, listed in .ci/packages.d/browser.txt), prefers
Noto Sans CJK **SC** for Chinese (the system's own fallback picks the JP cut for a character without a
language), and fixes antialiasing and hinting as Debian's defaults set them. Streamlit's own text
(Source Sans) is a web font it serves, the same everywhere.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

from dashboards.app import PAGES
from dashboards.texts import LANGUAGE_NAMES, Texts
from gpusteward import links
from reports.locale import Lang
from tests.browser.figures import Shown, Visit, grids_drawn
from tests.real import missing, require_binary

READY = ('[data-testid="stApp"][data-test-script-state="notRunning"]'
         '[data-test-connection-state="CONNECTED"]')
ERRORS = '[data-testid="stException"], [data-testid="stAlertContentError"]'
SKELETONS = '[data-testid="stSkeleton"], [data-testid="stAppSkeleton"]'
TIMEOUT_MS = int(os.environ.get("GPUSTEWARD_BROWSER_WAIT_S", "30")) * 1000
"""How long a page may take to draw; $GPUSTEWARD_BROWSER_WAIT_S raises it on a machine other work loads (a first
page open took over 30 s at load average 26)."""
WIDTH = 1400
HEIGHT = 1000
FONT_DIRS = {
    "/usr/share/fonts/truetype/dejavu": "fonts-dejavu-core",
    "/usr/share/fonts/opentype/noto": "fonts-noto-cjk",
}
_FONTS_CONF = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "urn:fontconfig:fonts.dtd">
<fontconfig>
{dirs}
  <cachedir>{cache}</cachedir>
  <match target="pattern">
    <test qual="all" name="family" compare="not_eq"><string>sans-serif</string></test>
    <test qual="all" name="family" compare="not_eq"><string>serif</string></test>
    <test qual="all" name="family" compare="not_eq"><string>monospace</string></test>
    <edit name="family" mode="append_last"><string>sans-serif</string></edit>
  </match>
  <alias><family>sans-serif</family>
    <prefer><family>DejaVu Sans</family><family>Noto Sans CJK SC</family></prefer></alias>
  <alias><family>serif</family>
    <prefer><family>DejaVu Serif</family><family>Noto Serif CJK SC</family></prefer></alias>
  <alias><family>monospace</family>
    <prefer><family>DejaVu Sans Mono</family><family>Noto Sans Mono CJK SC</family></prefer></alias>
  <match target="font">
    <edit name="antialias" mode="assign"><bool>true</bool></edit>
    <edit name="hinting" mode="assign"><bool>true</bool></edit>
    <edit name="hintstyle" mode="assign"><const>hintslight</const></edit>
    <edit name="rgba" mode="assign"><const>none</const></edit>
    <edit name="lcdfilter" mode="assign"><const>lcddefault</const></edit>
  </match>
</fontconfig>
"""


def fonts_conf(folder: Path) -> Path:
    """A fontconfig file naming only the fonts the screenshots are made with (see the module's docstring)."""
    for font_dir, package in FONT_DIRS.items():
        if not Path(font_dir).is_dir():
            missing(f"the fonts in {font_dir}", f"apt-get install {package}")
    folder.mkdir(parents=True, exist_ok=True)
    dirs = "\n".join(f"  <dir>{d}</dir>" for d in FONT_DIRS)
    path = folder / "fonts.conf"
    path.write_text(_FONTS_CONF.format(dirs=dirs, cache=folder / "cache"), encoding="utf-8")
    return path


@contextmanager
def chromium(scratch: Path) -> Iterator[Any]:
    """Debian's chromium, driven by Playwright, with the fonts above; `scratch` holds its fontconfig files."""
    executable = require_binary("chromium", package="chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright (Python)", "pip install playwright==1.65.2; never `playwright install`")
    env: dict[str, str | float | bool] = {**os.environ, "FONTCONFIG_FILE": str(fonts_conf(scratch))}
    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=executable, env=env,
            args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--font-render-hinting=none",
                  "--force-color-profile=srgb"],
        )
        try:
            yield browser
        finally:
            browser.close()


CHARTS_DRAWN = """() => [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].every(chart => {
    const drawn = chart.querySelector('canvas, svg');
    return drawn !== null && drawn.getBoundingClientRect().width > 0;
})"""  # judged on the charts present at each check: a rerun may replace them, so no locator is held


def rendered(page: Any) -> None:
    """Wait until Streamlit's script run has ended and everything it sent is drawn (charts draw after)."""
    from playwright.sync_api import expect

    page.wait_for_selector(READY, timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=TIMEOUT_MS)
    expect(page.locator(SKELETONS)).to_have_count(0, timeout=TIMEOUT_MS)
    page.wait_for_function(CHARTS_DRAWN, timeout=TIMEOUT_MS)
    page.evaluate("document.fonts.ready")


def no_errors(page: Any, where: str) -> None:
    errors = page.locator(ERRORS)
    assert errors.count() == 0, (where, [e.inner_text()[:500] for e in errors.all()])


def choose_language(page: Any, lang: Lang) -> None:
    """Pick `lang` in the sidebar (a new session starts in English) and wait for the rerun."""
    if lang == "en":
        return
    from playwright.sync_api import expect

    page.get_by_test_id("stSidebar").get_by_text(LANGUAGE_NAMES[lang]).click()
    # The navigation's titles come from the rerun, so they change only once it ran in `lang`.
    overview = page.get_by_test_id("stSidebarNavLink").filter(has_text=Texts(lang)("nav.overview"))
    expect(overview).to_have_count(1, timeout=TIMEOUT_MS)
    rendered(page)


def new_tab(browser: Any, lang: Lang) -> tuple[Any, Any]:
    """A browser context (1,400 px wide) and its page."""
    context = browser.new_context(viewport={"width": WIDTH, "height": HEIGHT},
                                  locale="zh-CN" if lang == "zh" else "en", device_scale_factor=1)
    return context, context.new_page()


class Tabs:
    """A tab per language, opened on first use at the dashboard's front page, the language chosen."""

    def __init__(self, browser: Any, url: str) -> None:
        self.browser, self.url = browser, url
        self.opened: dict[Lang, tuple[Any, Any]] = {}

    def page(self, lang: Lang) -> Any:
        if lang not in self.opened:
            context, page = new_tab(self.browser, lang)
            self.opened[lang] = (context, page)
            page.goto(self.url + "/", wait_until="domcontentloaded")
            rendered(page)
            choose_language(page, lang)
        return self.opened[lang][1]

    def close(self) -> None:
        for context, _ in self.opened.values():
            context.close()


def nav_link(page: str, lang: Lang) -> re.Pattern[str]:
    """The sidebar link's whole text, so "Jobs" does not also match "Jobs of a team"."""
    return re.compile(rf"^\s*{re.escape(Texts(lang)(f'nav.{page}'))}\s*$")


def go_to(page: Any, url: str, visit: Visit, lang: Lang, shown: Shown) -> None:
    """Open `visit` in the tab `page` and wait until it is drawn: from the sidebar, or by its address when it
    has a query (a new session, so the language is chosen again)."""
    # The page shown is not clicked again (that would rerun it); its query holds the sidebar's state.
    address = urlparse(page.url)
    here = address.path.strip("/").rsplit("/", 1)[-1] or PAGES[0]  # the first page is the default
    # A link's filters (a cluster, a team) stay in the session's sidebar, as a reader's would; a visit without
    # a query checks the whole pool's figures, so it starts a new session rather than inherit them.
    filtered = bool(set(parse_qs(address.query)) & {links.CLUSTER, links.TEAM, links.SCENARIO})
    if visit.query is None and filtered:
        _open(page, f"{url}/{visit.page}", lang)
    elif visit.query is None and here != visit.page:
        page.get_by_test_id("stSidebarNavLink").filter(has_text=nav_link(visit.page, lang)).first.click()
    elif visit.query is not None:
        _open(page, f"{url}/{visit.page}?{urlencode(visit.query(shown))}", lang)
    drawn(page, visit.heading(Texts(lang, shown.config.timezone), shown))


def _open(page: Any, address: str, lang: Lang) -> None:
    """Open `address` in a new session of the tab `page`, in `lang`."""
    page.goto(address, wait_until="domcontentloaded")
    rendered(page)
    choose_language(page, lang)


DRAWN = """({heading, ready, skeletons}) => {
    if (document.querySelector(ready) === null || document.querySelector('[data-testid="stStatusWidget"]') !== null
        || document.querySelector(skeletons) !== null) {
        return false;
    }
    const seen = el => {  // as Playwright's isVisible: rendered, not visibility:hidden, a non-empty box
        const box = el.getBoundingClientRect();
        return el.checkVisibility() && getComputedStyle(el).visibility === 'visible' && box.width > 0 && box.height > 0;
    };
    const headed = [...document.querySelectorAll('h1, h2, h3, h4, h5, h6, [role="heading"]')]
        .some(h => seen(h) && h.textContent.replace(/\\s+/g, ' ').toLowerCase().includes(heading));
    const grids = [...document.querySelectorAll('[data-testid="stDataFrame"]')];
    return headed
        && [...document.querySelectorAll('[data-testid="stVegaLiteChart"]')].every(chart => {
            const drawing = chart.querySelector('canvas, svg');
            return drawing !== null && drawing.getBoundingClientRect().width > 0;
        })
        && grids.every(grid => !seen(grid) || grid.querySelector('table') !== null);
}"""  # the conditions of `rendered` and `grids_drawn`, checked in the page every animation frame (see `drawn`):
# the selectors first, since the rest reads boxes and styles, which has the browser lay the page out there and
# then, every frame while Streamlit is still building it


def drawn(page: Any, heading: str) -> None:
    """Wait until the page headed `heading` is drawn: its figures too (every grid in view built).

    The checks run in the page on every animation frame (DRAWN) first: Playwright's `expect` (1.65) retries
    20, 50, 100 and 100 ms apart and then every 500 ms, so a heading shown at 1.3 s was seen as late as 1.77 s,
    and the bench's times carried up to half a second of polling. The checks after it (the same conditions,
    as locators) then pass at once, and say which one failed if the frame-polled wait ran out."""
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import expect

    wanted = " ".join(heading.split()).lower()
    with suppress(PlaywrightError):  # the locator checks below then fail naming the condition not met
        page.wait_for_function(DRAWN, arg={"heading": wanted, "ready": READY, "skeletons": SKELETONS},
                               polling="raf", timeout=TIMEOUT_MS)
    expect(page.get_by_role("heading", name=heading).first).to_be_visible(timeout=TIMEOUT_MS)
    rendered(page)
    grids_drawn(page)
