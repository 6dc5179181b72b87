"""Sections fed by newer indicators or by earlier months: preemption ledger, failures, SLA trend."""

from __future__ import annotations

import dataclasses

import polars as pl

from gpusteward.domain import Month
from reports import build_review, render_markdown
from sla.results import SLA_RESULTS
from tests.reports.fixtures import demo_config, demo_outputs, with_frames


def _preemption_rows() -> pl.DataFrame:
    rows = [
        ("training", "queue", "east/train", "preemptions", 12.0, None),
        ("training", "queue", "east/train", "preempted_gpu_hours", 340.0, None),
        ("evaluation", "queue", "west/eval", "preemptions", 3.0, None),
        ("evaluation", "queue", "west/eval", "preempted_gpu_hours", 900.0, None),
        ("evaluation", "queue", "west/eval", "recovery_time_p95", 5400.0, 3600.0),
    ]
    return pl.DataFrame(
        [{"month": "2026-11", "scenario": s, "subject_kind": k, "subject": n, "indicator": i, "value": v,
          "objective": o, "met": None if o is None else v <= o, "budget_left": None, "rows": 40,
          "completeness": 1.0, "evidence": f"sacct {n} preempted"} for s, k, n, i, v, o in rows],
        schema=SLA_RESULTS,
    )


def test_preemption_ledger_lists_the_largest_loss_first() -> None:
    outputs = demo_outputs()
    results = pl.concat([outputs.results, _preemption_rows()])
    review = build_review(with_frames(outputs, results=results), demo_config())
    section = review.section("preemption")
    assert section.unavailable is None
    text = render_markdown(review, "en")
    ledger = text.split("## Preemption and reclaim ledger")[1].split("## ")[0]
    assert ledger.index("west/eval") < ledger.index("east/train")
    assert "900 GPU-hours" in ledger
    assert "1h 30m" in ledger


def test_without_preemption_results_the_ledger_says_not_available() -> None:
    review = build_review(demo_outputs(), demo_config())
    reason = review.section("preemption").unavailable
    assert reason is not None
    assert reason.key == "reason.no_preemption_ledger"
    assert review.section("applied").unavailable is not None


def test_trend_reads_earlier_months_oldest_first() -> None:
    outputs = demo_outputs()
    october = dataclasses.replace(outputs, month=Month(2026, 10))
    later = dataclasses.replace(outputs, month=Month(2026, 12))  # not earlier: ignored
    review = build_review(outputs, demo_config(), history=[later, october])
    text = render_markdown(review, "zh")
    trend = text.split("## SLA 达标趋势")[1].split("## ")[0]
    assert "最近 2 个有评估结果的月份" in trend
    assert trend.index("2026-10") < trend.index("2026-11")
    assert "2026-12" not in trend
