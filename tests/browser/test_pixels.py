"""The screenshot comparison (tests/browser/pixels.py) and the reference rules (tests/browser/shots.py),
on images drawn here: no browser needed."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageDraw

from tests.browser import shots
from tests.browser.pixels import Tolerance, compare

W, H = 400, 300


def page(draw_more: object = None) -> Image.Image:
    """A white page with a dark box whose right edge is anti-aliased (a grey column), and a text-like bar."""
    image = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(image)
    d.rectangle((40, 40, 139, 99), fill=(30, 30, 30))
    d.line((140, 40, 140, 99), fill=(128, 128, 128))
    d.rectangle((40, 200, 300, 212), fill=(200, 60, 60))
    return image


def test_identical_pages_pass_with_nothing_marked() -> None:
    result = compare(page(), page())
    assert result.passed
    assert not result.differing.any()
    assert not result.antialiased.any()


def test_an_edge_drawn_a_fraction_of_a_pixel_elsewhere_is_anti_aliasing() -> None:
    shifted = page()
    ImageDraw.Draw(shifted).line((140, 40, 140, 99), fill=(60, 60, 60))  # the same edge, more covered
    result = compare(shifted, page())
    assert result.passed, result.problems()
    assert result.antialiased[40:100, 140].all()
    assert not result.differing.any()


def test_a_box_moved_by_three_pixels_fails_and_says_where() -> None:
    moved = Image.new("RGB", (W, H), "white")
    d = ImageDraw.Draw(moved)
    d.rectangle((43, 40, 142, 99), fill=(30, 30, 30))
    d.line((143, 40, 143, 99), fill=(128, 128, 128))
    d.rectangle((40, 200, 300, 212), fill=(200, 60, 60))
    result = compare(moved, page())
    assert not result.passed
    (message,) = [p for p in result.problems() if "squares" in p]
    x0, y0, x1, y1 = result.changed_box()
    assert (x0 <= 40, x1 >= 143, y0 <= 40, y1 >= 99) == (True, True, True, True), result.changed_box()
    assert f"x={x0}-{x1}, y={y0}-{y1}" in message


def test_a_small_dense_change_fails_though_its_share_of_the_page_is_tiny() -> None:
    # A 7 x 7 glyph turned into another (49 px): 0.04% of this page, far under the share on a real one.
    changed = page()
    ImageDraw.Draw(changed).rectangle((250, 120, 256, 126), fill=(0, 0, 0))
    result = compare(changed, page(), Tolerance(share=0.01))
    assert not result.passed
    x, y, count = result.dense_squares[0]
    assert count == 49
    assert (x <= 250, x + 16 > 256, y <= 120, y + 16 > 126) == (True, True, True, True), (x, y)


def test_scattered_single_pixels_pass() -> None:
    noisy = np.asarray(page()).copy()
    ys = np.arange(5, H, 37)
    xs = (ys * 7) % W
    noisy[ys, xs] = (0, 0, 0)  # isolated, one per tile at most: a rasteriser's rounding, not a change
    result = compare(Image.fromarray(noisy), page())
    assert result.differing.sum() == len(ys)
    assert result.passed, result.problems()


def test_more_differing_pixels_than_the_share_fails() -> None:
    noisy = np.asarray(page()).copy()
    noisy[::20, ::20] = (0, 0, 0)  # 1 px in every 400: 0.25% of the page
    result = compare(Image.fromarray(noisy), page())
    assert not result.passed
    assert "pixels differ" in result.problems()[0]


def test_a_taller_page_fails_naming_both_sizes() -> None:
    taller = Image.new("RGB", (W, H + 20), "white")
    taller.paste(page(), (0, 0))
    result = compare(taller, page())
    assert not result.passed
    assert result.problems()[0].startswith(f"the page is {W} x {H + 20} px, the reference {W} x {H} px")


def test_the_diff_image_marks_the_change_red() -> None:
    changed = page()
    ImageDraw.Draw(changed).rectangle((250, 120, 256, 126), fill=(0, 0, 0))
    diff = np.asarray(compare(changed, page()).diff_image(page()))
    assert tuple(diff[123, 253]) == (230, 0, 0)
    assert tuple(diff[10, 10]) == (255, 255, 255)


@settings(max_examples=40, deadline=None)
@given(x=st.integers(0, W - 6), y=st.integers(0, H - 6), size=st.integers(6, 30),
       colour=st.sampled_from([(0, 0, 0), (0, 128, 255), (255, 200, 0)]))
def test_any_solid_block_of_six_by_six_pixels_or_more_is_dense(x: int, y: int, size: int,
                                                          colour: tuple[int, int, int]) -> None:
    # The share alone would pass it on a real page (a 6 x 6 block is 0.0009% of 1,400 x 3,000 px).
    changed = page()
    ImageDraw.Draw(changed).rectangle((x, y, min(x + size, W) - 1, min(y + size, H) - 1), fill=colour)
    assert compare(changed, page(), Tolerance(share=1.0)).dense_squares


def _png(path: Path, image: Image.Image) -> Path:
    image.save(path)
    return path


def test_update_golden_is_refused_under_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    monkeypatch.setattr(shots, "IN_CI", True)
    with pytest.raises(AssertionError, match="refused under CI=true"):
        shots.assert_like_reference(_png(tmp_path / "overview.en.png", page()), tmp_path / "reference")


def test_a_missing_reference_fails_under_ci_and_skips_elsewhere(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    actual = _png(tmp_path / "overview.en.png", page())
    monkeypatch.setattr(shots, "IN_CI", True)
    with pytest.raises(pytest.fail.Exception, match="no reference screenshot"):
        shots.assert_like_reference(actual, tmp_path / "reference")
    monkeypatch.setattr(shots, "IN_CI", False)
    with pytest.raises(pytest.skip.Exception, match="UPDATE_GOLDEN=1"):
        shots.assert_like_reference(actual, tmp_path / "reference")


def test_update_golden_writes_a_changed_reference_and_keeps_one_within_tolerance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shots, "IN_CI", False)
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    refs = tmp_path / "reference"
    shots.assert_like_reference(_png(tmp_path / "overview.en.png", page()), refs)
    written = (refs / "overview.en.webp").stat().st_mtime_ns
    noisy = np.asarray(page()).copy()
    noisy[5, 5] = (0, 0, 0)
    shots.assert_like_reference(_png(tmp_path / "overview.en.png", Image.fromarray(noisy)), refs)
    assert (refs / "overview.en.webp").stat().st_mtime_ns == written  # within tolerance: left alone
    changed = page()
    ImageDraw.Draw(changed).rectangle((250, 120, 270, 140), fill=(0, 0, 0))
    shots.assert_like_reference(_png(tmp_path / "overview.en.png", changed), refs)
    with Image.open(refs / "overview.en.webp") as rewritten:
        assert tuple(np.asarray(rewritten)[130, 260]) == (0, 0, 0)


def test_a_mismatch_fails_naming_the_diff_image(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    monkeypatch.setattr(shots, "KEPT", tmp_path / "kept")
    refs = tmp_path / "reference"
    refs.mkdir()
    page().save(refs / "overview.en.webp", "WEBP", lossless=True)
    changed = page()
    ImageDraw.Draw(changed).rectangle((250, 120, 270, 140), fill=(0, 0, 0))
    actual = _png(tmp_path / "overview.en.png", changed)
    with pytest.raises(AssertionError, match=r"overview\.en\.png differs from its reference: .*\.en\.diff\.png"):
        shots.assert_like_reference(actual, refs)
    assert (tmp_path / "overview.en.diff.png").exists()
    assert (tmp_path / "kept" / "overview.en.diff.png").exists()
