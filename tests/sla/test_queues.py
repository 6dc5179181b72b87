"""Golden cases for the queue evaluator."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from sla.queues import QueueEvaluator
from tests.sla.builders import MONTH, config, inputs, job
from tests.sla.english import english

SLOS = """
[[scenarios.training.slos]]
indicator = "queue_wait_p95"
threshold = "30m"

[[scenarios.training.slos]]
indicator = "success_rate"
threshold = 0.5
"""


def _row(frame: pl.DataFrame, indicator: str, subject: str = "east/train") -> dict[str, Any]:
    rows = frame.filter((pl.col("indicator") == indicator) & (pl.col("subject") == subject))
    assert rows.height == 1, rows
    return rows.row(0, named=True)


def test_waits_and_success_rate() -> None:
    # Waits 0, 10, 20, 60 minutes (start - eligible); job 5 waited but is still pending.
    jobs = [
        job(1, eligible=0, start=0, end=30),
        job(2, eligible=0, start=10, end=40, state="FAILED"),
        job(3, eligible=5, start=25, end=None, state="RUNNING", account="vision"),
        job(4, eligible=0, start=60, end=90, state="CANCELLED by 1000"),
        job(5, eligible=0, start=None, end=None, state="PENDING"),
    ]
    out = QueueEvaluator().evaluate(inputs(jobs=jobs), config(SLOS))
    p50 = _row(out, "queue_wait_p50")
    assert p50["value"] == pytest.approx(15 * 60)  # linear between 10 and 20 minutes
    assert p50["objective"] is None
    assert p50["met"] is None
    p95 = _row(out, "queue_wait_p95")
    # Order statistics 0, 10, 20, 60 min; position 0.95 * 3 = 2.85 -> 20 + 0.85 * 40 = 54 min.
    assert p95["value"] == pytest.approx(54 * 60)
    assert p95["objective"] == 1800.0
    assert p95["met"] is False
    assert p95["rows"] == 4
    assert p95["completeness"] == 1.0
    assert "longest wait 1h (job 4, team nlp)" in english(p95["evidence"])
    assert _row(out, "queue_wait_max")["value"] == 3600.0
    ok = _row(out, "success_rate")
    # Ended in the month: jobs 1, 2, 4 (3 is running, 5 never started). One COMPLETED.
    assert ok["value"] == pytest.approx(1 / 3)
    assert ok["met"] is False
    assert ok["rows"] == 3
    assert "others: 1 CANCELLED, 1 FAILED" in english(ok["evidence"])
    assert set(out["month"].to_list()) == {str(MONTH)}
    assert set(out["scenario"].to_list()) == {"training"}


def test_each_queue_and_scenario_separately() -> None:
    jobs = [job(1, start=5), job(2, partition="other", start=5), job(3, cluster="west", start=5)]
    out = QueueEvaluator().evaluate(inputs(jobs=jobs), config())
    # "other" matches no rule: it has no scenario, so no queue objectives apply to it.
    queues = out.filter(pl.col("subject_kind") == "queue")
    assert sorted(set(queues["subject"].to_list())) == ["east/train", "west/train"]


def test_jobs_started_before_the_month_do_not_count() -> None:
    jobs = [job(1, submit=-600, eligible=-600, start=-10, end=30), job(2, start=5, end=30)]
    out = QueueEvaluator().evaluate(inputs(jobs=jobs), config())
    assert _row(out, "queue_wait_max")["value"] == 300.0
    assert _row(out, "success_rate")["rows"] == 2  # both ended in the month


def test_missing_eligible_time_lowers_completeness() -> None:
    jobs = [job(1, start=10), {**job(2, start=20), "eligible_time": None}]
    out = QueueEvaluator().evaluate(inputs(jobs=jobs), config())
    p95 = _row(out, "queue_wait_p95")
    assert p95["rows"] == 1
    assert p95["completeness"] == 0.5
    assert p95["value"] == 600.0


def test_clock_skew_never_gives_a_negative_wait() -> None:
    out = QueueEvaluator().evaluate(inputs(jobs=[job(1, eligible=10, start=5)]), config())
    assert _row(out, "queue_wait_max")["value"] == 0.0
