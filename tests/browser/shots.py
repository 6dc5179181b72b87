"""Whole-page screenshots, and their comparison with the reference images in tests/browser/reference/.

References are lossless WebP (`<page>.<lang>.webp`): the same pixels as the PNG the browser wrote, in a
quarter to a sixth of the bytes (the nine pages in two languages: 1.5 MB against 6.7 MB as optimised
PNG), which matters for files that every change of a page's look adds to the history again.

Streamlit's main area scrolls inside the window, so a "full page" screenshot is only the window: the
window is made as tall as the page's content (at most MAX_HEIGHT) for the shot, 1,400 px wide.

References change only on purpose: `UPDATE_GOLDEN=1 .venv/bin/pytest tests/browser/test_pages.py`
rewrites those that no longer match (within tolerance, so unchanged pages keep their files) and adds
missing ones; under CI=true that is refused, and a missing reference fails. A mismatch fails with
where the page changed and leaves `<name>.diff.png` (tests/browser/pixels.py: red counts, yellow is
anti-aliasing, blue boxes the dense squares) beside the screenshot in the test's tmp folder, copied to
/tmp/gs-screens too.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from tests.browser.browsing import HEIGHT, WIDTH
from tests.browser.pixels import compare_files
from tests.real import IN_CI

REFERENCE_DIR = Path(__file__).parent / "reference"
KEPT = Path("/tmp/gs-screens")
MAX_HEIGHT = 6000  # px; the review's whole text in Chinese is about 5,000
CONTENT_HEIGHT = """() => Math.max(...[document.scrollingElement, ...document.querySelectorAll(
    '[data-testid="stMain"], [data-testid="stAppViewContainer"], [data-testid="stMainBlockContainer"]')]
    .filter(Boolean).map(e => e.scrollHeight))"""
TWO_FRAMES = "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"


def capture(page: Any, path: Path) -> Path:
    """The page drawn whole into `path` (PNG), the window put back to its size after."""
    height = min(max(int(page.evaluate(CONTENT_HEIGHT)), HEIGHT), MAX_HEIGHT)
    page.set_viewport_size({"width": WIDTH, "height": height})
    try:
        page.evaluate(TWO_FRAMES)  # let the grids and charts draw at the new size
        page.mouse.move(5, 5)  # no hover effect on whatever the last click left the pointer over
        page.screenshot(path=str(path), animations="disabled", caret="hide")
    finally:
        page.set_viewport_size({"width": WIDTH, "height": HEIGHT})
    return path


def keep_copy(path: Path) -> None:
    """A copy under /tmp/gs-screens for people to look at after the run."""
    KEPT.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, KEPT / path.name)


def save_reference(source: Path, target: Path) -> None:
    """Lossless WebP."""
    with Image.open(source) as image:
        image.convert("RGB").save(target, "WEBP", lossless=True)


def assert_like_reference(actual: Path, reference_dir: Path = REFERENCE_DIR) -> None:
    """`actual` (`<page>.<lang>.png`) against its reference, `<page>.<lang>.webp`."""
    reference = reference_dir / f"{actual.stem}.webp"
    if os.environ.get("UPDATE_GOLDEN") == "1":
        if IN_CI:
            raise AssertionError("UPDATE_GOLDEN=1 is refused under CI=true: regenerate references locally, "
                                 "look at them, commit them")
        if not reference.exists() or not compare_files(actual, reference).passed:
            reference_dir.mkdir(parents=True, exist_ok=True)
            save_reference(actual, reference)
            sys.stderr.write(f"rewrote {reference}\n")
        return
    if not reference.exists():
        message = (f"no reference screenshot {reference}; create it with UPDATE_GOLDEN=1 .venv/bin/pytest "
                   "tests/browser/test_pages.py, look at it, commit it")
        if IN_CI:
            pytest.fail(message)
        pytest.skip(message)
    comparison = compare_files(actual, reference)
    if comparison.passed:
        return
    diff = actual.with_name(actual.stem + ".diff.png")
    with Image.open(reference) as ref:
        comparison.diff_image(ref).save(diff)
    keep_copy(diff)
    problems = "; ".join(comparison.problems())
    raise AssertionError(f"{actual.name} differs from its reference: {problems}. Screenshot: {actual}; "
                         f"reference: {reference}; diff: {diff} (copies in {KEPT}). If the change is meant, "
                         "UPDATE_GOLDEN=1 .venv/bin/pytest tests/browser/test_pages.py rewrites the references.")
