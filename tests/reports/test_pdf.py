"""The PDF edition rendered to PNG pages (poppler-utils): page count, title, summary page, charts, fonts."""

from __future__ import annotations

import subprocess
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from reports.locale import LANGS, Lang, load_catalogue
from tests.real import require_binary

EXPECTED_PAGES = {"en": 12, "zh": 12}
"""Pages of the fixture month's review; a layout change that moves this is worth a look at the PNGs.
(English went from 10 to 11 when the fixture's evidence became what the evaluators write: the
footnotes are longer and the last nine run onto page 11; Chinese went to 11 when the quota section
gained the plan's replay tables and its protected objectives, English absorbed them on page 11;
English went to 12 when the failure section gained its table by cause; Chinese went to 12 with the showback
section, which English absorbed on its 12 pages.)"""
DPI = 60
CHARTS = ("gpu_hours_by_scenario", "daily_gpu_hours", "daily_utilisation", "team_share", "queue_wait", "latency",
          "idle_by_team", "showback_by_team")
LINE_CHARTS = frozenset({"daily_gpu_hours", "daily_utilisation"})


def _poppler(name: str) -> str:
    return require_binary(name, package="poppler-utils")


def _pages(pdf: Path) -> list[Path]:
    prefix = pdf.with_suffix("")
    subprocess.run([_poppler("pdftoppm"), "-r", str(DPI), "-png", str(pdf), str(prefix)], check=True)
    return sorted(pdf.parent.glob(prefix.name + "-*.png"))


def _text(pdf: Path, page: int) -> str:
    cmd = [_poppler("pdftotext"), "-f", str(page), "-l", str(page), "-layout", str(pdf), "-"]
    return subprocess.run(cmd, capture_output=True, text=True, check=True).stdout


def _has_axis(png: Path, *, min_height: int = 80) -> bool:
    """A long dark vertical line, such as the value axis of a line chart: text and table rules never make one."""
    dark = np.asarray(Image.open(png).convert("L")) < 90
    for column in dark.T:
        edges = np.diff(np.concatenate(([0], column.astype(np.int8), [0])))
        starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        if starts.size and int((stops - starts).max()) >= min_height:
            return True
    return False


def _has_bar(png: Path, *, min_width: int = 20, min_height: int = 6) -> bool:
    """A dark filled rectangle: text and table rules never make one this wide and tall (at 60 dpi, pages of
    text reach 4 px for 6 rows; the shortest p50 bar of the queue chart is 34 px)."""
    dark = np.asarray(Image.open(png).convert("L")) < 90
    tall = 0
    for row in dark:
        # longest run of dark pixels in the row
        edges = np.diff(np.concatenate(([0], row.astype(np.int8), [0])))
        starts, stops = np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)
        best = int((stops - starts).max()) if starts.size else 0
        tall = tall + 1 if best >= min_width else 0
        if tall >= min_height:
            return True
    return False


@pytest.mark.parametrize("lang", LANGS)
def test_pdf_pages_title_summary_and_charts(pdfs: dict[str, Path], lang: Lang) -> None:
    pdf = pdfs[lang]
    pages = _pages(pdf)
    assert len(pages) == EXPECTED_PAGES[lang]
    catalogue = load_catalogue(lang)
    first = _text(pdf, 1)
    title = catalogue["review.title"].format(month={"en": "November 2026", "zh": "2026年11月"}[lang])
    assert first.strip().splitlines()[0].strip() == title
    for name in ("west/eval", "chat-70b", "Vision", "Research"):  # the summary page alone names them
        assert name in first, name
    assert not _has_bar(pages[0]), "page 1 is the summary: findings only"
    texts = [" ".join(_text(pdf, i).split()) for i in range(1, len(pages) + 1)]
    caption_pages = {}
    for key in CHARTS:
        caption = catalogue[f"chart.{key}.title"]
        found = [i for i, text in enumerate(texts, start=1) if caption in text]
        assert found, f"caption of {key} not in the PDF"
        caption_pages[key] = found[0]
    for key, page in caption_pages.items():
        drawn = _has_axis if key in LINE_CHARTS else _has_bar
        assert drawn(pages[page - 1]), f"no chart drawn on page {page} ({key})"


def test_chinese_is_set_in_a_cjk_font(pdfs: dict[str, Path]) -> None:
    fonts = subprocess.run([_poppler("pdffonts"), str(pdfs["zh"])], capture_output=True, text=True, check=True).stdout
    assert "CJK" in fonts or "WenQuanYi" in fonts
