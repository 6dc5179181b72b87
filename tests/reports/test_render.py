from __future__ import annotations

from pathlib import Path

import pytest

from reports import Review, build_review, render_markdown, write_review
from reports.render import escape_markdown
from tests.reports.fixtures import demo_config, demo_outputs, with_frames


def test_write_review_writes_one_file_per_language(review: Review, tmp_path: Path) -> None:
    paths = write_review(review, tmp_path / "out", formats=["md"], langs=["en", "zh"])
    assert [p.name for p in paths] == ["review-2026-11.en.md", "review-2026-11.zh.md"]
    assert paths[1].read_text(encoding="utf-8") == render_markdown(review, "zh")


def test_write_review_refuses_formats_it_cannot_write(review: Review, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="cannot write the review as docx"):
        write_review(review, tmp_path, formats=["md", "docx"])
    assert not list(tmp_path.iterdir())


def test_unknown_language_is_refused(review: Review) -> None:
    with pytest.raises(ValueError, match="unsupported language"):
        render_markdown(review, "fr")  # type: ignore[arg-type]


def test_data_text_cannot_break_a_table() -> None:
    assert escape_markdown("a|b *c* <d> [^1]\nnext") == "a\\|b \\*c\\* \\<d> \\[^1\\] next"
    assert escape_markdown("west/eval_2 _x_") == "west/eval_2 \\_x\\_"
    outputs = demo_outputs()
    results = outputs.results.with_columns(subject=outputs.results["subject"] + "|x")
    text = render_markdown(build_review(with_frames(outputs, results=results), demo_config()), "en")
    assert "west/eval\\|x" in text
    for line in text.splitlines():
        if line.startswith("| west/eval"):
            assert line.count(" | ") == line.replace("\\|", "").count(" | ")


def test_every_footnote_is_referenced_and_defined_once(review: Review) -> None:
    text = render_markdown(review, "en")
    for note in review.footnotes:
        assert text.count(f"[^{note.number}]:") == 1
        assert text.count(f"[^{note.number}]") >= 2
