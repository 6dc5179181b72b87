"""The review cut into parts for the review page (dashboards/review_sections.py), on the demo month's golden
reviews in both languages and on small documents."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st
from streamlit.testing.v1 import AppTest

from dashboards.app import SCREENS
from dashboards.review_sections import parts

GOLDEN = Path(__file__).parents[1] / "reports" / "golden"
DEFINITION = re.compile(r"^\[\^([^\]\s]+)\]:", re.M)
CITATION = re.compile(r"\[\^([^\]\s]+)\](?!:)")


@pytest.mark.parametrize("name", ["demo-2026-10.en.md", "demo-2026-10.zh.md"])
def test_every_line_lands_in_one_part_and_every_part_defines_what_it_cites(name: str) -> None:
    text = (GOLDEN / name).read_text(encoding="utf-8")
    cut = parts(text)
    headings = [line[3:].strip() for line in text.splitlines() if line.startswith("## ")]
    assert [p.title for p in cut] == ["", *headings]
    notes = dict(re.findall(r"^\[\^([^\]\s]+)\]:[ \t]?(.*)$", text, re.M))
    assert len(notes) > 10
    for part in cut:
        defined = set(DEFINITION.findall(part.body))
        assert set(CITATION.findall(part.body)) == defined, part.title  # each cited note, and no other
    prose = [line for line in text.splitlines()
             if line.strip() and not line.startswith("## ") and not DEFINITION.match(line)]
    bodies = [[line for line in p.body.splitlines() if not DEFINITION.match(line)] for p in cut]
    assert sorted(prose) == sorted(line for body in bodies for line in body
                                   if line.strip() and not line.startswith("- **["))
    listed = [line for body in bodies for line in body if line.startswith("- **[")]
    assert {re.match(r"- \*\*\[([^\]]+)\]\*\* ", line).group(1) for line in listed} == set(notes)  # type: ignore[union-attr]


def test_a_heading_inside_a_fenced_block_is_not_a_cut() -> None:
    cut = parts("# Title\n\n## One\n\n```\n## not a heading\n```\n\n## Two\n\ntext")
    assert [p.title for p in cut] == ["", "One", "Two"]
    assert "## not a heading" in cut[1].body


def test_notes_travel_with_the_part_that_cites_them() -> None:
    cut = parts("## A\n\nfirst[^1] and [^2]\n\n## B\n\nsecond[^2]\n\n## Notes\n\n[^1]: one\n[^2]: two")
    a, b, notes = cut  # nothing before the first heading: no untitled part
    assert a.body.endswith("[^1]: one\n[^2]: two")
    assert b.body.endswith("[^2]: two")
    assert "[^1]" not in b.body
    assert notes.body == "- **[1]** one\n- **[2]** two"


@given(st.lists(st.tuples(st.text("abcXYZ", min_size=1, max_size=8), st.text("xyz #\n", max_size=30)
                         .filter(lambda body: "\n## " not in "\n" + body)), max_size=6))
def test_cutting_keeps_the_titles_in_order(sections: list[tuple[str, str]]) -> None:
    text = "intro\n" + "".join(f"## {title}\n{body}\n" for title, body in sections)
    assert [p.title for p in parts(text)][1:] == [title.strip() for title, _ in sections]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_review_page_shows_the_decisions_and_builds_a_folded_part_when_unfolded(lang: str) -> None:
    at = AppTest.from_file(str(Path(__file__).parent / "app_script.py"), default_timeout=30)
    at.session_state["lang"] = lang
    at.run()
    at.switch_page(str(SCREENS / "review.py")).run()
    assert not at.exception, [e.value for e in at.exception]
    shown = [m.value for m in at.markdown]
    assert any(text.startswith("## ") for text in shown), shown[:3]  # the parts shown open: the decisions first
    folds = [e for e in at.expander if e.key is not None and e.key.startswith("review.")]
    assert len(folds) >= 5
    assert all(len(f.markdown) == 0 for f in folds)  # folded: not built
    key = str(folds[-1].key)
    at.session_state[key] = True
    at.run()
    opened = next(e for e in at.expander if e.key == key)
    assert len(opened.markdown) == 1
    assert opened.markdown[0].value.strip()
