"""The evaluator extension point: a Protocol, a registry, and `evaluate` that runs them all.

Built-in evaluators are registered by `default_registry()` exactly as a user's own would be;
importing this module registers nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import replace
from datetime import timedelta
from typing import Protocol

import polars as pl

from gpusteward import evidence as ev
from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from gpusteward.objectives import Objective, objectives
from gpusteward.slo_window import format_window
from gpusteward.tables import conform
from sla.capacity import ReserveEvaluator, TelemetryEvaluator
from sla.common import ALL_SCENARIOS, window_of
from sla.fairness import FairnessEvaluator
from sla.inference import OnlineInferenceEvaluator
from sla.inputs import EvaluationInputs
from sla.interactive import InteractiveEvaluator
from sla.interruptions import InterruptionEvaluator
from sla.outcomes import OutcomeEvaluator
from sla.queues import QueueEvaluator
from sla.results import SLA_RESULTS

_ORDER = ("scenario", "subject_kind", "subject", "indicator")


class Evaluator(Protocol):
    """Turns one month's frames into SLA_RESULTS rows. Pure: no I/O, no clock, no randomness."""

    @property
    def scenarios(self) -> frozenset[Scenario]:
        """The scenarios whose indicators this evaluator produces."""
        ...

    def evaluate(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        """Rows in the SLA_RESULTS schema."""
        ...


class EvaluatorRegistry:
    """Named evaluators, run in registration order."""

    def __init__(self) -> None:
        self._evaluators: dict[str, Evaluator] = {}

    def register(self, name: str, evaluator: Evaluator) -> None:
        if name in self._evaluators:
            raise ValueError(f"an evaluator named {name!r} is already registered")
        self._evaluators[name] = evaluator

    def unregister(self, name: str) -> None:
        del self._evaluators[name]

    def get(self, name: str) -> Evaluator:
        return self._evaluators[name]

    def names(self) -> list[str]:
        return list(self._evaluators)

    def __iter__(self) -> Iterator[tuple[str, Evaluator]]:
        return iter(list(self._evaluators.items()))

    def __len__(self) -> int:
        return len(self._evaluators)


def default_registry() -> EvaluatorRegistry:
    """A fresh registry holding the built-in evaluators."""
    registry = EvaluatorRegistry()
    registry.register("queues", QueueEvaluator())
    registry.register("interruptions", InterruptionEvaluator())
    registry.register("outcomes", OutcomeEvaluator())
    registry.register("online_inference", OnlineInferenceEvaluator())
    registry.register("reserve", ReserveEvaluator())
    registry.register("interactive", InteractiveEvaluator())
    registry.register("fairness", FairnessEvaluator())
    registry.register("telemetry", TelemetryEvaluator())
    return registry


def evaluate(
    inputs: EvaluationInputs,
    config: Config,
    *,
    registry: EvaluatorRegistry | None = None,
    scenarios: Collection[Scenario] | None = None,
) -> pl.DataFrame:
    """SLA_RESULTS for the month from every registered evaluator (or those touching `scenarios`).

    Rows come back in a fixed order, so evaluating the same inputs twice gives equal frames.
    """
    chosen = registry if registry is not None else default_registry()
    running = [
        evaluator for _name, evaluator in chosen if scenarios is None or evaluator.scenarios & frozenset(scenarios)
    ]
    frames = [conform(evaluator.evaluate(inputs, config), SLA_RESULTS) for evaluator in running]
    if not frames:
        return pl.DataFrame(schema=SLA_RESULTS)
    month = pl.concat(frames)
    for span, keys in rolling_objectives(config).items():
        month = _judged_over(month, inputs, config, running=running, span=span, keys=keys)
    return month.sort(_ORDER, maintain_order=True)


def rolling_objectives(config: Config) -> dict[timedelta, set[tuple[str, str]]]:
    """(scenario, indicator) of the rows each rolling window judges. Pool-wide rows (scenario `all`)
    follow the first objective of their indicator in any scenario, as their evaluators do."""
    out: dict[timedelta, set[tuple[str, str]]] = {}
    first: dict[str, Objective] = {}
    for (scenario, indicator), objective in objectives(config).items():
        first.setdefault(indicator, objective)
        if objective.window is not None:
            out.setdefault(objective.window, set()).add((scenario.value, indicator))
    for indicator, objective in first.items():
        if objective.window is not None:
            out[objective.window].add((ALL_SCENARIOS, indicator))
    return out


def _judged_over(
    month: pl.DataFrame, inputs: EvaluationInputs, config: Config, *, running: list[Evaluator], span: timedelta,
    keys: set[tuple[str, str]],
) -> pl.DataFrame:
    """Replace the rows of `keys` with the same evaluators' rows over the rolling window `span`."""
    rolling = replace(inputs, rolling=span)
    window = window_of(rolling)
    touched = {scenario for scenario, _ in keys}
    frames = [
        conform(e.evaluate(rolling, config), SLA_RESULTS)
        for e in running
        if ALL_SCENARIOS in touched or {s.value for s in e.scenarios} & touched
    ]
    key = pl.concat_str(pl.col("scenario"), pl.lit("\x1f"), pl.col("indicator"))
    wanted = [f"{scenario}\x1f{indicator}" for scenario, indicator in sorted(keys)]
    note = ev.encode([ev.part("rolling", span=format_window(span), start=window.start)])
    judged = (
        pl.concat(frames).filter(key.is_in(wanted)).with_columns(
            pl.col("evidence").map_elements(lambda e: ev.joined(e, note), return_dtype=pl.Utf8)
        )
        if frames else pl.DataFrame(schema=SLA_RESULTS)
    )
    return pl.concat([month.filter(~key.is_in(wanted)), judged])
