"""The internal SLO model: the objectives an evaluation uses, resolved from the config and the defaults.

The config's `[[scenarios.<name>.slos]]` tables are the user's versioned spec (`apiVersion =
"gpusteward/v1"`): durations as text, only what the user chose to say. `objectives(config)` turns
that spec into `Objective` values (thresholds in the indicator's unit, durations in seconds), and
fills every indicator a scenario's spec does not name from `DEFAULT_SLOS`, unless the scenario sets
`defaults = false`. Evaluators only ever read `Objective`s.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from enum import StrEnum

from gpusteward.config.schema import Config, ScenarioConfig
from gpusteward.domain import Scenario
from gpusteward.indicators import INDICATORS
from gpusteward.slo_window import parse_window

_H = 3600.0
_M = 60.0


class Source(StrEnum):
    CONFIG = "config"
    DEFAULT = "default"


def default_target(indicator: str) -> float:
    """The target an objective has when the config gives none: a pNN indicator's NN%, else 0.99."""
    found = INDICATORS.get(indicator)
    return found.percentile if found is not None and found.percentile is not None else 0.99


@dataclass(frozen=True)
class Objective:
    """One objective of one scenario, in the units results are written in.

    `target` is the share of good events over `window` for indicators judged by events
    (gpusteward.indicators.Judgement); the error budget is 1 - target. `window` None is the calendar
    month of the review; otherwise a rolling window ending at the review's end.
    """

    scenario: Scenario
    indicator: str
    threshold: float  # seconds for durations
    target: float = 0.99
    window: timedelta | None = None
    source: Source = Source.DEFAULT


def _d(scenario: Scenario, *pairs: tuple[str, float]) -> tuple[Objective, ...]:
    return tuple(Objective(scenario, indicator, threshold, default_target(indicator)) for indicator, threshold in pairs)


_QUEUE_BASICS = (("queue_wait_max", 24 * _H), ("success_rate", 0.5), ("record_completeness", 0.95))

DEFAULT_SLOS: dict[Scenario, tuple[Objective, ...]] = {
    Scenario.TRAINING: _d(
        Scenario.TRAINING, ("queue_wait_p95", 2 * _H), *_QUEUE_BASICS, ("preemption_rate", 0.1),
    ),
    Scenario.FINE_TUNING: _d(
        Scenario.FINE_TUNING, ("queue_wait_p95", 2 * _H), *_QUEUE_BASICS, ("reproducible_share", 0.9),
    ),
    Scenario.EVALUATION: _d(Scenario.EVALUATION, ("queue_wait_p95", 1 * _H), *_QUEUE_BASICS),
    Scenario.ONLINE_INFERENCE: _d(
        Scenario.ONLINE_INFERENCE,
        ("latency_p99", 8.0),
        ("ttft_p99", 10.0),
        ("error_rate", 0.05),
        ("availability", 0.99),
        ("reserve_headroom_gpus", 0.0),
    ),
    Scenario.BATCH_INFERENCE: _d(
        Scenario.BATCH_INFERENCE, ("queue_wait_p95", 4 * _H), *_QUEUE_BASICS, ("within_deadline", 0.95),
    ),
    Scenario.INTERACTIVE: _d(
        Scenario.INTERACTIVE, ("time_to_gpu_p95", 15 * _M), ("idle_gpu_hours", 100.0), ("sessions_not_reclaimed", 0.0),
    ),
    Scenario.GENERAL_COMPUTE: _d(Scenario.GENERAL_COMPUTE, ("queue_wait_p95", 4 * _H), *_QUEUE_BASICS),
}
"""Objectives used for every indicator a scenario's spec does not name (see docs/evaluation.md#defaults)."""

DEFAULT_TELEMETRY_COMPLETENESS = 0.995
"""Hosts should report at least this share of their GPU-minutes (about 3.7 hours of silence a month)."""
DEFAULT_DEADLINE = timedelta(hours=24)
"""batch_inference: a record should complete within this long of its submission when `deadline` is unset."""
DEFAULT_IDLE_LIMIT = timedelta(hours=2)
DEFAULT_LIFECYCLE_LIMIT = timedelta(hours=12)


def scenario_objectives(config: Config, scenario: Scenario) -> tuple[Objective, ...]:
    """The scenario's configured objectives, then the defaults for the indicators it does not name."""
    sc = config.scenarios.get(scenario, ScenarioConfig())
    configured = tuple(
        Objective(
            scenario, s.indicator, s.threshold, default_target(s.indicator) if s.target is None else s.target,
            parse_window(s.window), Source.CONFIG,
        )
        for s in sc.slos
    )
    if not sc.defaults:
        return configured
    named = {o.indicator for o in configured}
    return configured + tuple(o for o in DEFAULT_SLOS[scenario] if o.indicator not in named)


def objectives(config: Config) -> dict[tuple[Scenario, str], Objective]:
    """Every objective in force, keyed by (scenario, indicator); the first of a scenario's duplicates wins."""
    out: dict[tuple[Scenario, str], Objective] = {}
    for scenario in Scenario:
        for o in scenario_objectives(config, scenario):
            out.setdefault((scenario, o.indicator), o)
    return out


def objective_for(config: Config, scenario: Scenario | str, indicator: str) -> Objective | None:
    try:
        key = Scenario(scenario)
    except ValueError:
        return None
    return next((o for o in scenario_objectives(config, key) if o.indicator == indicator), None)


def deadline(config: Config) -> timedelta:
    sc = config.scenarios.get(Scenario.BATCH_INFERENCE)
    return sc.deadline if sc is not None and sc.deadline is not None else DEFAULT_DEADLINE


def interactive_limits(config: Config) -> tuple[timedelta, timedelta]:
    """(idle limit, lifecycle limit) of interactive sessions."""
    sc = config.scenarios.get(Scenario.INTERACTIVE, ScenarioConfig())
    return (sc.idle_limit or DEFAULT_IDLE_LIMIT, sc.lifecycle_limit or DEFAULT_LIFECYCLE_LIMIT)


def reproducibility(config: Config) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(job fields searched, keys that must be present) for fine-tuning reproducibility."""
    sc = config.scenarios.get(Scenario.FINE_TUNING, ScenarioConfig())
    return tuple(sc.reproducibility_fields), tuple(sc.reproducibility_keys)
