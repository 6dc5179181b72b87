"""The evaluator registry and `evaluate`: add-ons plug in like the built-ins, output is deterministic."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from sla.common import result_row, results_frame
from sla.evaluator import EvaluatorRegistry, default_registry, evaluate
from sla.inputs import EvaluationInputs
from sla.month import evaluate_month
from sla.results import BREACH_EPISODES, COMPLETENESS, IDLE_BY_JOB, SLA_RESULTS, USAGE
from tests.sla.builders import config, demo_config, inputs, job, minutes, window


class PreemptionCounter:
    """An add-on evaluator, written the way a user would."""

    @property
    def scenarios(self) -> frozenset[Scenario]:
        return frozenset({Scenario.TRAINING})

    def evaluate(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        n = inputs.jobs.filter(pl.col("state") == "PREEMPTED").height
        return results_frame([result_row(
            inputs, scenario="training", subject_kind="pool", subject="all", indicator="queue_wait_max",
            value=float(n), objective=None, rows=inputs.jobs.height, completeness=1.0, evidence="demo add-on",
        )])


def test_default_registry_is_fresh_and_complete() -> None:
    first, second = default_registry(), default_registry()
    assert first is not second
    assert first.names() == [
        "queues", "interruptions", "outcomes", "online_inference", "reserve", "interactive", "fairness", "telemetry",
    ]
    first.unregister("fairness")
    assert "fairness" in default_registry().names()


def test_add_on_registers_like_a_built_in() -> None:
    registry = default_registry()
    registry.register("preemptions", PreemptionCounter())
    with pytest.raises(ValueError, match="already registered"):
        registry.register("preemptions", PreemptionCounter())
    out = evaluate(inputs(jobs=[job(1, state="PREEMPTED")]), config(), registry=registry)
    assert out.schema == SLA_RESULTS
    assert out.filter(pl.col("evidence") == "demo add-on")["value"].to_list() == [1.0]


def test_scenario_filter_runs_only_matching_evaluators() -> None:
    registry = EvaluatorRegistry()
    registry.register("preemptions", PreemptionCounter())
    data = inputs(jobs=[job(1)])
    assert evaluate(data, config(), registry=registry, scenarios=[Scenario.INTERACTIVE]).height == 0
    assert evaluate(data, config(), registry=registry, scenarios=[Scenario.TRAINING]).height == 1


def test_empty_month_gives_typed_empty_frames() -> None:
    out = evaluate_month(inputs(), config())
    assert out.results.schema == SLA_RESULTS
    assert out.idle.schema == IDLE_BY_JOB
    assert out.episodes.schema == BREACH_EPISODES
    assert out.usage.schema == USAGE
    assert out.completeness.schema == COMPLETENESS


job_rows = st.lists(
    st.tuples(
        st.integers(1, 500), st.sampled_from(["train", "eval", "infer", "interactive", "batch"]),
        st.sampled_from(["nlp", "vision", "platform", "nobody"]), st.integers(0, 300), st.integers(0, 200),
        st.one_of(st.none(), st.integers(1, 600)), st.sampled_from(["COMPLETED", "FAILED", "RUNNING", "PREEMPTED"]),
        st.integers(0, 8),
    ),
    max_size=12,
)


@settings(max_examples=25, deadline=None)
@given(job_rows)
def test_evaluating_twice_gives_the_same_frame(rows: list[tuple[Any, ...]]) -> None:
    jobs = [
        job(i, partition=p, account=a, submit=s, eligible=s, start=s + w, end=None if d is None else s + w + d,
            state="RUNNING" if d is None else st_, gpus=g)
        for i, (_, p, a, s, w, d, st_, g) in enumerate(rows)
    ]
    data = inputs(
        jobs=jobs,
        gpu_minutes=minutes("0", [1.0] * 40 + [90.0] * 5),
        windows=[window("chat", 5, [5, 9, 10, 10, 10, 10], errors=1)],
    )
    cfg = demo_config()
    first, second = evaluate_month(data, cfg), evaluate_month(data, cfg)
    for name in ("results", "idle", "episodes", "usage", "completeness"):
        assert getattr(first, name).equals(getattr(second, name)), name
