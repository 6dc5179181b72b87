"""The showback section: totals, the unallocated capacity as the config charges it, and its chart."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import polars as pl

from reports import build_review, render_markdown
from reports.model import Chart, Table
from tests.reports.fixtures import demo_config, demo_outputs


def _section(unallocated: str, frame: pl.DataFrame | None = None) -> str:
    config = demo_config()
    config = replace(config, showback=replace(config.showback, unallocated=unallocated,  # type: ignore[arg-type]
                                              platform_team="research"))
    outputs = demo_outputs() if frame is None else replace(demo_outputs(), showback=frame)
    review = build_review(outputs, config)
    section = review.section("showback")
    assert section.unavailable is None
    assert any(isinstance(b, Chart) and b.key == "showback_by_team" for b in section.blocks)
    text = render_markdown(review, "en")
    return text[text.index("## Showback"):text.index("## Preemption")]


def test_the_unallocated_capacity_is_its_own_row_by_default() -> None:
    text = _section("none")
    assert "| Unallocated capacity | 2,771 GPU-hours | 6,928.12 |" in text
    assert "charged to no team" in text
    assert "Unallocated shared" not in text  # a column of zeros is left out
    assert "teams were allocated 14,592 GPU-hours of the 17,364 GPU-hours" in text


def test_a_shared_unallocated_capacity_shows_what_each_team_received() -> None:
    shared = demo_outputs().showback.with_columns(
        pl.when(pl.col("kind") == "unallocated").then(-pl.col("gpu_cost") - pl.col("energy_cost"))
        .otherwise(pl.lit(Decimal("100.00"))).cast(pl.Decimal(18, 2)).alias("unallocated_share"))
    text = _section("proportional", shared)
    assert "Unallocated shared" in text
    assert "in proportion to each team's allocated GPU cost" in text


def test_a_platform_team_is_named() -> None:
    assert "charged to Research (showback.unallocated = platform)" in _section("platform")


def test_a_month_without_showback_rows_says_so() -> None:
    review = build_review(replace(demo_outputs(), showback=demo_outputs().showback.head(0)), demo_config())
    assert review.section("showback").unavailable is not None
    assert not any(isinstance(b, Table) for b in review.section("showback").blocks)
