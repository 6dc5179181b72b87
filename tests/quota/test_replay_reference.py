"""The fast scheduler model (quota/replay_model.py) against its frozen reference
(tests/quota/replay_reference.py): exactly the same segments, placements and preemptions, over
generated clusters (node shapes, account trees, account and QOS limits, several preempting QOS with
REQUEUE and CANCEL victims), jobs (ties in submit time and priority, multi-node jobs, jobs that never
fit, jobs that started before the window) and limits."""

from __future__ import annotations

import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from quota.preemption import PreemptionRules
from quota.replay_model import ClusterModel, ReplayJob, run_replay
from tests.quota.replay_reference import reference_replay

ACCOUNTS = ("a", "b", "c", "d")
QOS_PRIORITY = {"urgent": 20, "high": 10, "normal": 5, "low": 0}
NODE_NAMES = tuple(f"n{k}" for k in range(6))

limits_of = st.fixed_dictionaries({a: st.one_of(st.none(), st.integers(0, 16)) for a in (*ACCOUNTS, "p")})


@st.composite
def models(draw: st.DrawFn) -> ClusterModel:
    shape = tuple(draw(st.lists(st.sampled_from([2, 4, 8]), min_size=1, max_size=6)))
    parents: dict[str, str | None] = {a: draw(st.sampled_from(["p", "q", None])) for a in ACCOUNTS}
    parents["q"] = draw(st.sampled_from(["p", None]))
    # Any QOS may preempt any other, a lower one too (preemption_rules keeps such a pair when it is not
    # given the QOS priorities): then a victim's job can come first in a pass and start, after which
    # a later job may preempt it in the same pass.
    preempts: dict[str, frozenset[str]] = {}
    for preemptor in QOS_PRIORITY:
        chosen = draw(st.sets(st.sampled_from([q for q in QOS_PRIORITY if q != preemptor]), max_size=2))
        if chosen:
            preempts[preemptor] = frozenset(chosen)
    requeue = {q: draw(st.booleans()) for q in QOS_PRIORITY}
    return ClusterModel(
        shape, NODE_NAMES[: len(shape)], parents=parents,
        account_limits={"p": draw(st.one_of(st.none(), st.integers(2, 24))),
                        "q": draw(st.one_of(st.none(), st.integers(2, 24)))},
        qos_limits={q: draw(st.one_of(st.none(), st.integers(2, 16))) for q in QOS_PRIORITY},
        rules=PreemptionRules(preempts, requeue),
    )


@st.composite
def job_lists(draw: st.DrawFn) -> list[ReplayJob]:
    jobs = []
    for _ in range(draw(st.integers(1, 40))):
        qos = draw(st.sampled_from(sorted(QOS_PRIORITY)))
        submit = float(draw(st.integers(0, 60)) * 5)
        work = float(draw(st.integers(0, 40)) * 5)
        gpus = draw(st.integers(1, 12))
        nodes = min(gpus, draw(st.integers(1, 3)))
        pinned = draw(st.integers(0, 9)) == 0
        hosts: tuple[str, ...] = ()
        if pinned:
            submit = -float(draw(st.integers(1, 50)))
            hosts = tuple(draw(st.lists(st.sampled_from(NODE_NAMES), min_size=0, max_size=nodes, unique=True)))
        jobs.append(ReplayJob(
            submit=submit, work=work, limit=work + float(draw(st.sampled_from([0, 0, 5, 50, 500]))), gpus=gpus,
            nodes=nodes, account=draw(st.sampled_from(ACCOUNTS)), qos=qos,
            order=(-float(QOS_PRIORITY[qos]), -float(draw(st.integers(0, 2))), submit),
            pinned_start=float(draw(st.integers(-20, 0))) if pinned else None, pinned_hosts=hosts,
        ))
    return jobs


def _same(jobs: list[ReplayJob], model: ClusterModel, limits: dict[str, Any]) -> None:
    expected = reference_replay(jobs, model, limits)
    got = run_replay(jobs, model, limits)
    assert got.segments == expected.segments
    assert got.placements == expected.placements
    assert got.preemptions == expected.preemptions


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job_lists(), models(), limits_of)
def test_the_fast_model_replays_exactly_as_the_reference(
    jobs: list[ReplayJob], model: ClusterModel, limits: dict[str, int | None]
) -> None:
    _same(jobs, model, limits)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(job_lists(), st.integers(1, 16))
def test_a_pool_without_nodes_or_limits_replays_exactly_as_the_reference(jobs: list[ReplayJob], gpus: int) -> None:
    _same(jobs, ClusterModel.pool(gpus), {})


def _busy_month(seed: int, jobs: int, tight: bool) -> tuple[list[ReplayJob], ClusterModel, dict[str, int | None]]:
    """A seeded busy cluster: long queues held by limits and by capacity, multi-node jobs, time limits
    from a few rounded values, two preempting QOS (the shape of the simulated fleet's clusters)."""
    rng = random.Random(seed)
    model = ClusterModel(
        (8,) * 12, tuple(f"n{k}" for k in range(12)), parents={"a": "p", "b": "p", "c": None, "d": "q"},
        account_limits={"p": 60}, qos_limits={"low": 40},
        rules=PreemptionRules({"high": frozenset({"low"}), "normal": frozenset({"low"})}, {"low": seed % 2 == 0}))
    out = []
    for _ in range(jobs):
        qos = rng.choice(["high", "normal", "normal", "low", "low"])
        gpus = rng.choice([1, 1, 1, 2, 2, 4, 8, 16, 24])
        submit = float(rng.randrange(0, 200_000, 60))
        work = float(rng.randrange(60, 30_000, 30))
        out.append(ReplayJob(
            submit=submit, work=work, limit=max(work, float(rng.choice([3600, 7200, 14_400, 86_400]))), gpus=gpus,
            nodes=max(1, -(-gpus // 8)), account=rng.choice(ACCOUNTS), qos=qos,
            order=(-float(QOS_PRIORITY[qos]), -float(rng.randrange(3)), submit)))
    if tight:  # limits that hold most of the queue, so a start often leaves the next job of a path held
        return out, model, {"a": 8, "b": 12, "c": 6, "d": 4, "q": 6}
    return out, model, {"a": 24, "b": None, "c": 32, "d": 16, "q": 20}


@pytest.mark.parametrize(("seed", "tight"), [(1, False), (2, False), (3, True), (4, True)])
def test_a_busy_month_replays_exactly_as_the_reference(seed: int, tight: bool) -> None:
    jobs, model, limits = _busy_month(seed, 1500, tight)
    expected = reference_replay(jobs, model, limits)
    assert tight or expected.preemptions  # preemption is exercised (tight limits leave no low job to preempt)
    assert sum(s > q for _i, q, s, _e in expected.segments) > len(jobs) / 2  # and queues: most jobs waited
    _same(jobs, model, limits)


def _job(account: str, gpus: int, submit: float, work: float, limit: float, *, host: str | None = None) -> ReplayJob:
    return ReplayJob(submit=submit, work=work, limit=limit, gpus=gpus, nodes=1, account=account, qos="normal",
                     order=(0.0, 0.0, submit), pinned_start=0.0 if host else None, pinned_hosts=(host,) if host else ())


def test_when_the_job_that_would_reserve_is_held_by_a_limit_the_next_one_reserves() -> None:
    # At 50 a GPU job ends and the pass starts F on n1; that takes the last of account a's limit, so R
    # (a's 4-GPU job, the first that would reserve) is passed over, and R2 reserves n1 from 100 on.
    # L, after R2 and running past 100, may not take n1's last free GPU: it waits for F's end, when a
    # new pass reserves for R (a has room again).
    model = ClusterModel((8, 8), ("n0", "n1"))
    jobs = [
        _job("c", 8, -1.0, 300.0, 300.0, host="n0"),
        _job("c", 6, -1.0, 100.0, 100.0, host="n1"),
        _job("c", 2, -1.0, 50.0, 50.0, host="n1"),
        _job("a", 1, 10.0, 40.0, 40.0),  # F
        _job("a", 4, 20.0, 10.0, 10.0),  # R
        _job("b", 8, 30.0, 10.0, 10.0),  # R2
        _job("d", 1, 40.0, 10.0, 1000.0),  # L
    ]
    result = run_replay(jobs, model, {"a": 4})
    starts = {i: s for i, _q, s, _e in result.segments}
    assert [starts[i] for i in range(3, 7)] == [50.0, 100.0, 110.0, 90.0]  # L starts when F ends, not at 50
    _same(jobs, model, {"a": 4})
