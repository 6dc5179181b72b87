"""The review's findings link to the dashboard page and filter behind them, only with `[dashboard] url` set."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime

import polars as pl

from gpusteward.config.schema import DashboardConfig
from reports import build_review, render_markdown
from reports.html import render_html
from tests.reports.fixtures import demo_config, demo_outputs

BASE = "https://gpus.example.org/steward"


def _links(config_url: str) -> dict[str, str | None]:
    config = replace(demo_config(), dashboard=DashboardConfig(url=config_url))
    review = build_review(demo_outputs(), config)
    return {f.message.key: f.link for f in review.findings}


def test_no_url_no_link() -> None:
    review = build_review(demo_outputs(), demo_config())
    assert [f.link for f in review.findings if f.link] == []
    for lang in ("en", "zh"):
        assert "gpus.example.org" not in render_markdown(review, lang)
        assert 'class="dashboard"' not in render_html(review, lang)


def test_each_finding_opens_its_page_and_filter() -> None:
    found = _links(BASE)
    first_breach = demo_outputs().episodes.filter(pl.col("subject") == "east")["start"].min()
    assert isinstance(first_breach, datetime)
    assert found["finding.idle"] == f"{BASE}/jobs?month=2026-11&team=research&focus=idle"
    assert found["finding.queue_wait"] == f"{BASE}/queues?month=2026-11&cluster=west"
    assert found["finding.share"] == f"{BASE}/jobs?month=2026-11&team=vision&sort=gpu_hours"
    assert found["finding.service"] == f"{BASE}/inference?month=2026-11"
    breach = found["finding.breach_floor"]  # the inference reserve: its threshold is a floor
    assert breach == f"{BASE}/heatmap?month=2026-11&cluster=east&day={first_breach:%Y-%m-%d}"
    assert found["finding.quota"] == f"{BASE}/plans?month=2026-11"
    assert found["finding.gap_detail"] is not None
    assert found["finding.gap_detail"].startswith(f"{BASE}/heatmap?")
    assert found["finding.no_data"] is None  # nothing to look at: the objective had no data


def test_the_links_are_written_in_both_languages_and_formats() -> None:
    config = replace(demo_config(), dashboard=DashboardConfig(url=BASE))
    review = build_review(demo_outputs(), config)
    idle = f"{BASE}/jobs?month=2026-11&team=research&focus=idle"
    assert f"([open in the dashboard]({idle}))" in render_markdown(review, "en")
    assert f"（[在仪表盘中打开]({idle})）" in render_markdown(review, "zh")
    html = render_html(review, "en")
    assert f'<a class="dashboard" href="{idle.replace("&", "&amp;")}">open in the dashboard</a>' in html
