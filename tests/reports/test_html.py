"""The HTML edition: same model as the Markdown, escaped data, charts inlined with captions and evidence."""

from __future__ import annotations

import base64
import re
from html.parser import HTMLParser

import polars as pl
import pytest

from reports import Review, build_review
from reports.html import render_html
from reports.locale import LANGS, Lang
from reports.model import Chart
from tests.reports.fixtures import demo_config, demo_outputs, empty_outputs, with_frames

CHARTS = ("gpu_hours_by_scenario", "daily_gpu_hours", "daily_utilisation", "team_share", "queue_wait", "latency",
          "idle_by_team", "showback_by_team")


class _Outline(HTMLParser):
    """Collects ids, section ids, figure data-chart keys, image sources and the summary's text."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: list[str] = []
        self.sections: list[str] = []
        self.charts: list[str] = []
        self.images: list[str] = []
        self.lang = ""
        self._in_summary = False
        self.summary = ""

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if a.get("id"):
            self.ids.append(str(a["id"]))
        if tag == "html":
            self.lang = str(a.get("lang"))
        if tag == "section":
            self.sections.append(str(a.get("id")))
            self._in_summary = a.get("id") == "summary"
        if tag == "figure":
            self.charts.append(str(a.get("data-chart")))
        if tag == "img":
            self.images.append(str(a.get("src")))

    def handle_data(self, data: str) -> None:
        if self._in_summary:
            self.summary += data


def _outline(text: str) -> _Outline:
    parser = _Outline()
    parser.feed(text)
    return parser


@pytest.mark.parametrize("lang", LANGS)
def test_structure_sections_charts_and_notes(review: Review, lang: Lang) -> None:
    text = render_html(review, lang)
    outline = _outline(text)
    assert outline.lang == {"en": "en", "zh": "zh-CN"}[lang]
    assert outline.sections == ["summary", *(s.key for s in review.sections), "evidence"]
    assert outline.charts == list(CHARTS)
    assert len(outline.ids) == len(set(outline.ids)), "ids are unique"
    for src in outline.images:
        assert src.startswith("data:image/svg+xml;base64,")
        svg = base64.b64decode(src.split(",", 1)[1]).decode("utf-8")
        assert svg.lstrip().startswith("<?xml")
        assert "<svg" in svg
    # every footnote marker points to a note that exists
    targets = set(re.findall(r'href="#note-(\d+)"', text))
    assert targets
    assert targets <= {str(n.number) for n in review.footnotes}
    assert {f"note-{n.number}" for n in review.footnotes} <= set(outline.ids)


@pytest.mark.parametrize("lang", LANGS)
def test_every_chart_has_a_caption_and_its_evidence(review: Review, lang: Lang) -> None:
    text = render_html(review, lang)
    charts = [b for s in review.sections for b in s.blocks if isinstance(b, Chart)]
    for chart in charts:
        assert chart.note is not None, chart.key
        figure = re.search(rf'<figure[^>]*data-chart="{chart.key}".*?</figure>', text, re.S)
        assert figure is not None
        assert f'href="#note-{chart.note}"' in figure.group(0)


def test_the_summary_alone_names_every_planted_problem(review: Review) -> None:
    summary = _outline(render_html(review, "en")).summary
    for name in ("west/eval", "chat-70b", "Vision", "Research", "west/31001", "east"):
        assert name in summary, name
    assert "starving" in summary
    assert "idle" in summary


def test_data_text_is_escaped() -> None:
    outputs = demo_outputs()
    results = outputs.results.with_columns(
        subject=pl.when(pl.col("subject") == "west/eval").then(pl.lit("<script>x</script>")).otherwise("subject")
    )
    text = render_html(build_review(with_frames(outputs, results=results), demo_config()), "en")
    assert "<script>" not in text
    assert "&lt;script&gt;x&lt;/script&gt;" in text


@pytest.mark.parametrize("lang", LANGS)
def test_an_empty_month_has_no_charts_and_says_not_available(lang: Lang) -> None:
    review = build_review(empty_outputs(), demo_config())
    text = render_html(review, lang)
    assert "<figure" not in text
    marker = {"en": "Not available: ", "zh": "暂无："}[lang]
    assert text.count(marker) == sum(1 for s in review.sections if s.unavailable)
