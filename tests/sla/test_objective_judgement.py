"""An objective's `target` and `window` change what is met: judged by good events over the window."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusteward.objectives import objective_for
from sla.common import Events, judge
from sla.evaluator import evaluate
from sla.histogram import histogram_quantile, observations_within
from tests.sla.builders import config, inputs, job
from tests.sla.english import english

DAY = 24 * 60.0


def _slo(target: str = "", window: str = "") -> str:
    return (
        '[[scenarios.training.slos]]\nindicator = "queue_wait_p95"\nthreshold = "1h"\n'
        + (f"target = {target}\n" if target else "")
        + (f'window = "{window}"\n' if window else "")
    )


def _p95(frame: pl.DataFrame) -> dict[str, Any]:
    rows = frame.filter(
        (pl.col("indicator") == "queue_wait_p95") & (pl.col("subject_kind") == "queue")
        & (pl.col("scenario") == "training")
    )
    assert rows.height == 1, rows
    return rows.row(0, named=True)


def _waits(minutes: list[float], *, first_day: float = 0.0) -> list[dict[str, Any]]:
    """One training job per wait, a day apart from `first_day`, each waiting that many minutes."""
    return [
        job(i + 1, eligible=(first_day + i) * DAY, start=(first_day + i) * DAY + w, end=(first_day + i) * DAY + w + 30)
        for i, w in enumerate(minutes)
    ]


def test_the_target_is_the_share_of_waits_within_the_threshold() -> None:
    # 20 waits: 18 of 10 minutes, 2 of 2 hours. 90% waited at most 1h.
    jobs = _waits([10.0] * 18 + [120.0] * 2)
    loose = _p95(evaluate(inputs(jobs=jobs), config(_slo(target="0.9"))))
    strict = _p95(evaluate(inputs(jobs=jobs), config(_slo(target="0.95"))))
    assert loose["met"] is True
    assert loose["budget_left"] == pytest.approx(0.0)  # 10% bad of a 10% budget: all spent, not overspent
    assert strict["met"] is False
    assert strict["budget_left"] == pytest.approx(1 - 0.10 / 0.05)  # -1: twice the budget
    # The value shown is still the p95 the name says; only the judgement moved.
    assert loose["value"] == strict["value"]


def test_the_default_target_of_a_percentile_indicator_is_its_percentile() -> None:
    cfg = config(_slo())
    found = objective_for(cfg, "training", "queue_wait_p95")
    assert found is not None
    assert found.target == 0.95
    assert found.window is None
    maximum = objective_for(cfg, "training", "queue_wait_max")
    assert maximum is not None
    assert maximum.target == 1.0  # the longest wait: every job must be within it


def test_a_rolling_window_judges_only_its_last_days() -> None:
    # Bad waits in the first week of March, good ones in the last week (March has 31 days).
    jobs = _waits([180.0] * 5, first_day=1) + _waits([5.0] * 5, first_day=25)
    jobs = [dict(j, job_id=n + 1) for n, j in enumerate(jobs)]
    month = _p95(evaluate(inputs(jobs=jobs), config(_slo())))
    week = _p95(evaluate(inputs(jobs=jobs), config(_slo(window="7d"))))
    assert month["met"] is False
    assert month["rows"] == 10
    assert week["met"] is True
    assert week["rows"] == 5
    assert week["budget_left"] == pytest.approx(1.0)
    assert "rolling 7d window from 2026-03-25 00:00 UTC" in english(week["evidence"])
    # The breakdown rows of the same indicator follow the objective's window too.
    team_rows = evaluate(inputs(jobs=jobs), config(_slo(window="7d"))).filter(
        (pl.col("indicator") == "queue_wait_p95") & (pl.col("subject_kind") == "queue_team")
    )
    assert team_rows["rows"].to_list() == [5]


def test_a_share_indicator_reports_the_budget_its_threshold_allows() -> None:
    cfg = config('[[scenarios.training.slos]]\nindicator = "success_rate"\nthreshold = 0.8\n')
    slo = objective_for(cfg, "training", "success_rate")
    verdict, left = judge("success_rate", 0.9, slo, None)
    assert verdict is True
    assert left == pytest.approx(1 - 0.1 / 0.2)


@given(
    counts=st.lists(st.integers(min_value=0, max_value=50), min_size=3, max_size=6),
    threshold=st.floats(min_value=0.0, max_value=40.0),
    q=st.sampled_from([0.5, 0.9, 0.95, 0.99]),
)
def test_share_within_matches_the_quantile(counts: list[int], threshold: float, q: float) -> None:
    """The quantile q is within the threshold exactly when the share within it reaches q."""
    le = [*[1.0, 2.0, 4.0, 8.0, 16.0][:len(counts) - 1], float("inf")]
    cumulative = [float(sum(counts[: i + 1])) for i in range(len(counts))]
    good, total = observations_within(le, cumulative, threshold)
    if total == 0:
        return
    quantile = float(histogram_quantile(q, le, [cumulative])[0])
    if abs(quantile - threshold) < 1e-9 or abs(good / total - q) < 1e-9:
        return  # on the boundary itself either side may round
    assert (quantile <= threshold) == (good / total >= q)


@given(good=st.integers(0, 1000), bad=st.integers(0, 1000), target=st.floats(0.5, 0.999))
def test_met_and_budget_agree(good: int, bad: int, target: float) -> None:
    """Met exactly when budget is left (>= 0): the two views of one objective never contradict."""
    cfg = config(_slo(target=str(target)))
    slo = objective_for(cfg, "training", "queue_wait_p95")
    verdict, left = judge("queue_wait_p95", 1.0, slo, Events(float(good), float(good + bad)))
    if good + bad == 0:
        assert (verdict, left) == (None, None)
        return
    assert left is not None
    assert left <= 1.0
    if abs(left) > 1e-6:
        assert verdict is (left > 0)
