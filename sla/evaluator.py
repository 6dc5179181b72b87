"""The evaluator extension point: a Protocol, a registry, and `evaluate` that runs them all.

Built-in evaluators are registered by `default_registry()` exactly as a user's own would be;
importing this module registers nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from typing import Protocol

import polars as pl

from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from gpusteward.tables import conform
from sla.capacity import ReserveEvaluator, TelemetryEvaluator
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
    frames = [
        conform(evaluator.evaluate(inputs, config), SLA_RESULTS)
        for _name, evaluator in chosen
        if scenarios is None or evaluator.scenarios & frozenset(scenarios)
    ]
    if not frames:
        return pl.DataFrame(schema=SLA_RESULTS)
    return pl.concat(frames).sort(_ORDER, maintain_order=True)
