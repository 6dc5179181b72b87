"""The SLO spec in the config against the internal model: defaults, overrides, validation."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gpusteward.config import load_config_text
from gpusteward.domain import Scenario
from gpusteward.errors import ConfigError
from gpusteward.indicators import INDICATORS
from gpusteward.objectives import (
    DEFAULT_SLOS,
    Source,
    deadline,
    interactive_limits,
    objective_for,
    objectives,
    reproducibility,
)


def test_every_scenario_has_defaults_that_fit_the_catalogue() -> None:
    assert set(DEFAULT_SLOS) == set(Scenario)
    for scenario, defaults in DEFAULT_SLOS.items():
        assert defaults
        for o in defaults:
            assert o.scenario is scenario
            assert scenario in INDICATORS[o.indicator].scenarios
            assert o.source is Source.DEFAULT


def test_an_empty_config_gets_the_defaults() -> None:
    config = load_config_text("")
    found = objectives(config)
    assert found[(Scenario.EVALUATION, "queue_wait_p95")].threshold == 3600
    assert found[(Scenario.ONLINE_INFERENCE, "latency_p99")].threshold == 8.0
    assert deadline(config) == timedelta(hours=24)
    assert interactive_limits(config) == (timedelta(hours=2), timedelta(hours=12))
    assert reproducibility(config) == (("comment",), ("base_model", "dataset", "seed"))


def test_the_spec_overrides_one_indicator_and_keeps_the_other_defaults() -> None:
    config = load_config_text(
        """
        apiVersion = "gpusteward/v1"
        [[scenarios.training.slos]]
        indicator = "queue_wait_p95"
        threshold = "30m"
        target = 0.95
        """
    )
    p95 = objective_for(config, "training", "queue_wait_p95")
    assert p95 is not None
    assert (p95.threshold, p95.target, p95.source) == (1800, 0.95, Source.CONFIG)
    success = objective_for(config, Scenario.TRAINING, "success_rate")
    assert success is not None
    assert success.source is Source.DEFAULT


def test_defaults_can_be_switched_off_per_scenario() -> None:
    config = load_config_text("[scenarios.training]\ndefaults = false\n")
    assert objective_for(config, "training", "success_rate") is None
    assert objective_for(config, "evaluation", "success_rate") is not None
    assert objective_for(config, "no-such-scenario", "success_rate") is None


def test_every_spec_problem_is_listed_at_once() -> None:
    with pytest.raises(ConfigError) as info:
        load_config_text(
            """
            [scenarios.training]
            deadline = "1h"
            reproducibility_fields = ["comment", "colour"]
            [[scenarios.training.slos]]
            indicator = "success_rate"
            threshold = 1.5
            [[scenarios.training.slos]]
            indicator = "success_rate"
            threshold = 0.5
            window = "0s"
            [scenarios.interactive]
            idle_limit = "0s"
            """
        )
    problems = info.value.problems
    assert "scenarios.training.slos[0].threshold: 'success_rate' is a fraction between 0 and 1, got 1.5" in problems
    assert "scenarios.training.slos[1].indicator: 'success_rate' already has an objective in this scenario" in problems
    assert (
        "scenarios.training.slos[1].window: expected \"month\" or a rolling window of whole days from 1d to 28d,"
        " got '0s'"
    ) in problems
    assert "scenarios.training.deadline: only applies to scenario 'batch_inference'" in problems
    unknown = "scenarios.training.reproducibility_fields[1]: unknown job field 'colour'"
    assert any(p.startswith(unknown) for p in problems)
    assert "scenarios.interactive.idle_limit: expected a positive duration" in problems
    assert len(problems) == 6


def test_target_and_window_are_checked_against_what_they_can_mean() -> None:
    with pytest.raises(ConfigError) as info:
        load_config_text(
            """
            [[scenarios.training.slos]]
            indicator = "success_rate"
            threshold = 0.5
            target = 0.9
            [[scenarios.training.slos]]
            indicator = "queue_wait_p95"
            threshold = "1h"
            window = "30d"
            [[scenarios.training.slos]]
            indicator = "gpu_efficiency"
            threshold = 0.5
            window = "7d"
            """
        )
    problems = info.value.problems
    assert any(p.startswith("scenarios.training.slos[0].target: 'success_rate' is judged by its threshold")
               for p in problems)
    assert any(p.startswith("scenarios.training.slos[1].window: expected \"month\" or a rolling") for p in problems)
    assert any("slos[2].window: 'gpu_efficiency' comes from the month's GPU-minute digest" in p for p in problems)


def test_rolling_windows_and_targets_are_read() -> None:
    config = load_config_text(
        '[[scenarios.evaluation.slos]]\nindicator = "queue_wait_p95"\nthreshold = "1h"\ntarget = 0.9\nwindow = "28d"\n'
    )
    found = objective_for(config, "evaluation", "queue_wait_p95")
    assert found is not None
    assert (found.target, found.window) == (0.9, timedelta(days=28))
