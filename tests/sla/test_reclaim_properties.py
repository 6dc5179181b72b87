"""Invariants of the reclaim plan: unknown minutes never make a job reclaimable, and idle-since is never
earlier than the first idle minute seen."""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from sla.reclaim import reclaim_plan
from tests.sla.builders import at
from tests.sla.reclaim_builders import (
    BUSY,
    IDLE,
    NOW,
    gpu_minutes_of,
    reclaim_config,
    reclaim_inputs,
    replica,
    trainer,
)

CONFIG = reclaim_config()
TRAINING_IDLE_FOR = timedelta(hours=1)
LOW = 3.0  # below [idle] util_below (5%), not zero

# Minutes of one GPU as stretches of one utilisation, so idle runs long enough to count appear often.
stretches = st.lists(st.tuples(st.sampled_from([IDLE, LOW, BUSY]), st.integers(1, 90)), min_size=1, max_size=8)


def _utils(parts: list[tuple[float, int]]) -> list[float | None]:
    utils: list[float | None] = [BUSY] * 240
    utils += [u for u, n in parts for _ in range(n)]
    return utils[-240:]


def _verdict(utils: list[float | None]) -> tuple[str, object]:
    plan = reclaim_plan(reclaim_inputs(running=[trainer(2)], gpu_minutes=gpu_minutes_of(2, utils)), CONFIG)
    row = plan.filter(pl.col("job_id") == "2").to_dicts()[0]
    return row["verdict"], row["idle_since"]


@settings(max_examples=60, deadline=None)
@given(stretches, st.sets(st.integers(0, 239), max_size=40))
def test_minutes_without_data_never_make_a_job_a_candidate(parts: list[tuple[float, int]], lost: set[int]) -> None:
    utils = _utils(parts)
    with_gaps = [None if i in lost else u for i, u in enumerate(utils)]
    before, since_before = _verdict(utils)
    after, since_after = _verdict(with_gaps)
    if after == "candidate":
        assert before == "candidate"
        assert isinstance(since_after, datetime)
        assert isinstance(since_before, datetime)
        assert since_after >= since_before  # a gap can only shorten an idle stretch


@settings(max_examples=60, deadline=None)
@given(stretches)
def test_idle_since_never_precedes_the_first_idle_minute_and_covers_idle_for(parts: list[tuple[float, int]]) -> None:
    utils = _utils(parts)
    verdict, since = _verdict(utils)
    if verdict != "candidate":
        return
    first_idle = next(i for i, u in enumerate(utils) if u is not None and u < CONFIG.idle.util_below)
    assert isinstance(since, datetime)
    assert since >= at(first_idle)
    assert NOW - since >= TRAINING_IDLE_FOR
    idle_from = int((since - at(0)) / timedelta(minutes=1))
    assert all(u is not None and u < CONFIG.idle.util_below for u in utils[idle_from:])


REPLICAS = [replica(11, 0), replica(12, 10), replica(13, 20), replica(14, 30)]


def _replica_verdict(requests: list[float | None]) -> tuple[str, object]:
    """Job 14's verdict with 5-minute windows ending at NOW, NOW - 5m, ...; None: that window is missing."""
    windows = [
        {"cluster": "east", "service": "chat", "instance": "a", "ts": NOW - timedelta(minutes=5 * i), "window_s": 300,
         "requests": r, "errors": 0.0}
        for i, r in enumerate(reversed(requests)) if r is not None
    ]
    plan = reclaim_plan(reclaim_inputs(running=REPLICAS, windows=windows), CONFIG)
    row = plan.filter(pl.col("job_id") == "14").to_dicts()[0]
    return row["verdict"], row["idle_since"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([0.0, 0.0, 0.0, 4.0]), min_size=48, max_size=48), st.sets(st.integers(0, 46)))
def test_missing_inference_windows_never_make_a_replica_a_candidate(requests: list[float], lost: set[int]) -> None:
    # The latest window is kept: the service is judged up to it (docs/reclaim.md says what that allows).
    with_gaps: list[float | None] = [None if i in lost else r for i, r in enumerate(requests)]
    before, since_before = _replica_verdict(list(requests))
    after, since_after = _replica_verdict(with_gaps)
    if after == "candidate":
        assert before == "candidate"
        assert isinstance(since_after, datetime)
        assert isinstance(since_before, datetime)
        assert since_after >= since_before
