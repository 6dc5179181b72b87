"""The inference section's "services near capacity", in both languages, and its summary finding."""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl
import pytest

from reports import build_review, render_markdown
from reports.locale import Lang
from sla.results import SLA_RESULTS
from tests.reports.fixtures import MONTH, demo_config, demo_outputs, with_frames

Rows = Sequence[tuple[str, str, float | None, float | None]]


def _capacity(rows: Rows) -> pl.DataFrame:
    """(service, indicator, value, objective) rows as the online inference evaluator writes them."""
    return pl.DataFrame(
        [(str(MONTH), "online_inference", "service", s, i, v, o, None, None, 288, None, f"{s} {i} evidence")
         for s, i, v, o in rows],
        schema=SLA_RESULTS, orient="row",
    )


ROWS: Rows = [
    ("chat-70b", "replicas", 4.0, None),
    ("chat-70b", "gpus_serving", 8.0, None),
    ("chat-70b", "capacity_headroom", 0.05, None),
    ("embed-small", "replicas", 2.0, None),
    ("embed-small", "gpus_serving", 2.0, None),
    ("embed-small", "capacity_headroom", 0.97, None),
    ("code-7b", "capacity_headroom", 0.3, 0.4),  # above the default limit, below its own objective
]


def _markdown(rows: Rows, lang: Lang) -> str:
    outputs = demo_outputs()
    results = pl.concat([outputs.results, _capacity(rows)])
    return render_markdown(build_review(with_frames(outputs, results=results), demo_config()), lang)


def _latency(text: str, title: str) -> str:
    return text.split(f"## {title}")[1].split("\n## ", maxsplit=1)[0]


def test_services_near_capacity_are_listed_tightest_first() -> None:
    section = _latency(_markdown(ROWS, "en"), "Inference latency against objectives")
    assert "2 services were near capacity" in section
    table = section.split("near capacity")[1]
    assert table.index("chat-70b") < table.index("code-7b")
    assert "embed-small" not in table
    assert "5.0%" in table
    assert "| 4 |" in table.replace("  ", " ")


def test_summary_names_the_service_near_capacity() -> None:
    text = _markdown(ROWS, "en")
    summary = text.split("\n## ")[1]
    assert "**chat-70b** is near capacity: 5.0% of its capacity left" in summary


def test_chinese_review_has_the_same_section() -> None:
    text = _markdown(ROWS, "zh")
    assert "个服务接近容量上限" in text
    assert "推理服务 **chat-70b** 接近容量上限" in text


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_service_near_capacity_says_so(lang: Lang) -> None:
    text = _markdown([("embed-small", "capacity_headroom", 0.97, None)], lang)
    expected = {"en": "No inference service was near capacity", "zh": "没有推理服务接近容量上限"}[lang]
    assert expected in text


def test_without_capacity_rows_the_section_says_nothing_about_capacity() -> None:
    text = render_markdown(build_review(demo_outputs(), demo_config()), "en")
    assert "near capacity" not in text
