"""Golden cases for the interactive and fairness evaluators."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from sla.fairness import DEFAULT_OBJECTIVE, FairnessEvaluator, fairness_objective
from sla.interactive import InteractiveEvaluator
from tests.sla.builders import config, inputs, job, minutes
from tests.sla.english import english

INTERACTIVE = """
[[scenarios.interactive.slos]]
indicator = "time_to_gpu_p95"
threshold = "15m"

[[scenarios.interactive.slos]]
indicator = "idle_gpu_hours"
threshold = 0.5

[idle]
min_minutes = 30
"""


def _row(frame: pl.DataFrame, indicator: str, subject: str) -> dict[str, Any]:
    rows = frame.filter((pl.col("indicator") == indicator) & (pl.col("subject") == subject))
    assert rows.height == 1, frame
    return rows.row(0, named=True)


def test_interactive_time_to_gpu_and_idle_hours_per_team() -> None:
    jobs = [
        job(1, partition="interactive", submit=0, start=2, end=100),
        job(2, partition="interactive", submit=0, start=30, end=40),
        job(3, partition="interactive", account="vision", submit=0, start=1, end=10),
        job(4, submit=0, start=500, end=600),  # training: not a session
    ]
    # Session 1: 40 busy minutes then 58 idle minutes holding memory.
    gm = minutes("1", [60.0] * 40 + [0.0] * 58, start=2, fb=8000.0)
    out = InteractiveEvaluator().evaluate(inputs(jobs=jobs, gpu_minutes=gm), config(INTERACTIVE))
    ttg = _row(out, "time_to_gpu_p95", "nlp")
    # Waits 2 and 30 minutes: p95 = 2 + 0.95 * 28 = 28.6 minutes.
    assert ttg["value"] == pytest.approx(28.6 * 60)
    assert ttg["objective"] == 900.0
    assert ttg["met"] is False
    assert _row(out, "time_to_gpu_p95", "vision")["met"] is True
    idle = _row(out, "idle_gpu_hours", "nlp")
    assert idle["value"] == pytest.approx(58 / 60)
    assert idle["met"] is False
    assert idle["rows"] == 98
    assert idle["completeness"] == pytest.approx(98 / 108)  # session 2 sent no telemetry
    assert "most idle: job 1 (1.0 GPU-hours)" in english(idle["evidence"])
    assert "utilisation from gpu_util" in english(idle["evidence"])
    # Vision's session has no telemetry at all: no value, not zero.
    assert _row(out, "idle_gpu_hours", "vision")["value"] is None
    assert set(out["scenario"].to_list()) == {"interactive"}


def test_fairness_measures_use_against_the_clusters_capacity() -> None:
    # east: 16 GPUs; nlp is entitled to 8, vision to 4.8. March has 744 hours.
    jobs = [
        job(1, start=0, end=60, gpus=6),  # nlp: 6 GPU-hours, within its 8 GPUs
        job(2, account="vision", start=0, end=60, gpus=4),  # vision: 4 GPU-hours
        job(3, account="nobody", start=0, end=60, gpus=5),  # unattributed: not a team
    ]
    out = FairnessEvaluator().evaluate(inputs(jobs=jobs), config())
    nlp = _row(out, "share_over_entitlement", "nlp")
    assert nlp["value"] == pytest.approx(6 / (8 * 744))
    assert nlp["objective"] == DEFAULT_OBJECTIVE
    assert nlp["met"] is True
    vision = _row(out, "share_over_entitlement", "vision")
    assert vision["value"] == pytest.approx(4 / (0.3 * 16 * 744))
    assert vision["scenario"] == "all"
    assert vision["subject_kind"] == "team"
    assert "5.0 GPU-hours more not attributed to any team" in english(vision["evidence"])


def test_soaking_up_idle_gpus_while_nobody_waits_is_borrowing_not_over_use() -> None:
    # vision (entitled 4.8 GPUs) holds all 16 GPUs for the whole month; nobody else asks for any.
    jobs = [job(1, account="vision", start=0, end=744 * 60, gpus=16)]
    out = FairnessEvaluator().evaluate(inputs(jobs=jobs), config())
    vision = _row(out, "share_over_entitlement", "vision")
    assert vision["value"] == pytest.approx(4.8 / 4.8)  # only the entitled part counts
    assert vision["met"] is True
    assert "8,333 GPU-hours of them borrowed" in english(vision["evidence"])


def test_holding_more_than_the_entitlement_while_another_team_waits_is_over_use() -> None:
    # vision holds 16 GPUs for the month while an nlp job waits the whole time.
    jobs = [
        job(1, account="vision", start=0, end=744 * 60, gpus=16),
        job(2, account="nlp", submit=0, start=None, end=None, gpus=1),
    ]
    out = FairnessEvaluator().evaluate(inputs(jobs=jobs), config())
    vision = _row(out, "share_over_entitlement", "vision")
    assert vision["value"] == pytest.approx(16 / 4.8)
    assert vision["met"] is False
    assert "8,333 GPU-hours above the entitlement while another team waited" in english(vision["evidence"])


def test_per_cluster_shares_override_the_pool_wide_share() -> None:
    cfg = config("\n[teams.vision.cluster_shares]\neast = 0.5\n")
    jobs = [
        job(1, account="vision", start=0, end=744 * 60, gpus=16),
        job(2, account="nlp", submit=0, start=None, end=None, gpus=1),
    ]
    vision = _row(FairnessEvaluator().evaluate(inputs(jobs=jobs), cfg), "share_over_entitlement", "vision")
    assert vision["value"] == pytest.approx(16 / 8)


def test_online_inference_on_a_reserved_cluster_is_outside_the_shared_capacity() -> None:
    cfg = config('\n[[protection.inference_reserve]]\ncluster = "east"\nmin_gpus = 6\n')
    jobs = [
        job(1, partition="infer", account="vision", start=0, end=744 * 60, gpus=6),
        job(2, account="vision", start=0, end=744 * 60, gpus=3),
        job(3, account="nlp", submit=0, start=None, end=None, gpus=1),
    ]
    vision = _row(FairnessEvaluator().evaluate(inputs(jobs=jobs), cfg), "share_over_entitlement", "vision")
    assert vision["value"] == pytest.approx(3 / (0.3 * 10))


def test_fairness_objective_from_config() -> None:
    cfg = config('\n[[scenarios.training.slos]]\nindicator = "share_over_entitlement"\nthreshold = 1.5\n')
    assert fairness_objective(cfg) == 1.5
    assert fairness_objective(config()) == DEFAULT_OBJECTIVE


def test_fairness_counts_only_the_part_inside_the_month() -> None:
    jobs = [job(1, start=-60, end=60, gpus=1), job(2, account="vision", start=0, end=60, gpus=1)]
    out = FairnessEvaluator().evaluate(inputs(jobs=jobs), config())
    assert _row(out, "share_over_entitlement", "nlp")["value"] == pytest.approx(1 / (8 * 744))
