"""Invariants of budgets, burn rates, evaluation and idle detection, over generated data."""

from __future__ import annotations

import math

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from sla.budget import budget_left, burn_rate
from sla.evaluator import evaluate
from sla.idle import idle_by_gpu
from sla.idle_states import minute_states
from sla.inference import OnlineInferenceEvaluator
from tests.sla.builders import at, config, inputs, job, minutes, window

targets = st.floats(min_value=0.5, max_value=1.0)
counts = st.integers(min_value=0, max_value=10_000)
SLOS = """
[[scenarios.online_inference.slos]]
indicator = "latency_p99"
threshold = "4s"
target = 0.9
"""


@given(bad=counts, good=counts, target=targets)
def test_budget_left_never_exceeds_one(bad: int, good: int, target: float) -> None:
    left = budget_left(bad, bad + good, target)
    assert left is None or left <= 1.0


@given(bad=counts, good=counts, more=st.integers(min_value=1, max_value=10_000), target=targets)
def test_good_events_never_raise_the_burn_rate(bad: int, good: int, more: int, target: float) -> None:
    before = burn_rate(bad, bad + good, target)
    after = burn_rate(bad, bad + good + more, target)
    assert after is not None
    assert before is None or after <= before or (math.isinf(before) and math.isinf(after))


slow_or_fast = st.lists(st.booleans(), min_size=1, max_size=24)


def _windows(slow: list[bool]) -> list[dict[str, object]]:
    # A slow window has every request in the 8s bucket: its p99 breaks the 4s objective.
    return [window("chat", (i + 1) * 5, [0, 0, 0, 10, 10, 10] if s else [10] * 6) for i, s in enumerate(slow)]


@settings(max_examples=25, deadline=None)
@given(slow=slow_or_fast, extra=st.integers(min_value=1, max_value=12))
def test_good_windows_never_lower_the_budget_left(slow: list[bool], extra: int) -> None:
    cfg = config(SLOS)
    end = len(slow) + extra
    before = OnlineInferenceEvaluator().evaluate(inputs(windows=_windows(slow), data_end=at(end * 5)), cfg)
    after = OnlineInferenceEvaluator().evaluate(
        inputs(windows=_windows(slow + [False] * extra), data_end=at(end * 5)), cfg
    )
    b, a = (f.filter(pl.col("indicator") == "latency_p99")["budget_left"][0] for f in (before, after))
    assert a >= b
    assert a <= 1.0


job_specs = st.lists(
    st.tuples(
        st.sampled_from(["train", "interactive", "infer", "other"]),
        st.sampled_from(["nlp", "vision", "nobody"]),
        st.integers(min_value=0, max_value=600),  # start
        st.integers(min_value=1, max_value=600),  # duration
        st.sampled_from(["COMPLETED", "FAILED", "PREEMPTED", "TIMEOUT", "RUNNING"]),
        st.integers(min_value=1, max_value=4),
    ),
    max_size=12,
)


@settings(max_examples=20, deadline=None)
@given(specs=job_specs)
def test_evaluating_twice_gives_the_same_result(specs: list[tuple[str, str, int, int, str, int]]) -> None:
    jobs = [
        job(i, partition=p, account=a, submit=max(0, s - 5), eligible=max(0, s - 5), start=s,
            end=None if state == "RUNNING" else s + d, state=state, gpus=g, nodes="h1")
        for i, (p, a, s, d, state, g) in enumerate(specs, start=1)
    ]
    cfg = config()
    data = inputs(jobs=jobs, data_end=at(1440))
    assert_frame_equal(evaluate(data, cfg), evaluate(data, cfg))


utilisations = st.lists(st.one_of(st.none(), st.sampled_from([0.0, 1.0, 50.0, 99.0])), min_size=1, max_size=90)


@settings(max_examples=40, deadline=None)
@given(utils=utilisations, allocated=st.booleans())
def test_a_minute_without_data_is_never_idle_or_busy(utils: list[float | None], allocated: bool) -> None:
    cfg = config()
    rows = minutes("1" if allocated else None, utils, fb=2048.0)
    gpus = [{"cluster": "east", "host": "h1", "gpu": 0, "first_seen": at(0)}]
    jobs = [job(1, partition="interactive", start=0, end=len(utils))] if allocated else []
    data = inputs(jobs=jobs, gpu_minutes=rows, gpus=gpus, data_end=at(len(utils)))
    states = minute_states(data.gpu_minutes, cfg.idle)
    with_data = {at(i) for i, u in enumerate(utils) if u is not None}
    assert set(states["ts"].to_list()) <= with_data
    per_gpu = idle_by_gpu(data, cfg).row(0, named=True)
    counted = sum(per_gpu[c] for c in ("busy_minutes", "idle_minutes", "idle_held_minutes", "unallocated_minutes"))
    assert counted == len(with_data)
    assert per_gpu["no_data_minutes"] == len(utils) - len(with_data)
