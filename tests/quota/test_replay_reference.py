"""The fast scheduler model (quota/replay_model.py) against its frozen reference
(tests/quota/replay_reference.py): exactly the same segments, placements and preemptions, over
generated clusters (node shapes, account trees, account and QOS limits, several preempting QOS with
REQUEUE and CANCEL victims), jobs (ties in submit time and priority, multi-node jobs, jobs that never
fit, jobs that started before the window) and limits."""

from __future__ import annotations

from typing import Any

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
    preempts: dict[str, frozenset[str]] = {}
    for preemptor, victims in (("urgent", ("high", "normal", "low")), ("high", ("normal", "low")),
                               ("normal", ("low",))):
        chosen = draw(st.sets(st.sampled_from(victims)))
        if chosen:
            preempts[preemptor] = frozenset(chosen)
    requeue = {q: draw(st.booleans()) for q in ("high", "normal", "low")}
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
