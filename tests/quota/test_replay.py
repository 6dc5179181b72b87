"""The replay: golden cases of each part of the scheduler model, and its invariants (hypothesis)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quota.preemption import PreemptionRules
from quota.replay import REPLAY_JOBS, outcomes, replay, replay_cluster, replay_segments
from quota.replay_model import ClusterModel, ReplayResult

ACCOUNTS = ("a", "b", "c")
QOS = ("high", "normal", "low")
QOS_PRIORITY = {"high": 10, "normal": 5, "low": 0}


def _jobs(rows: list[dict[str, Any]]) -> pl.DataFrame:
    full = []
    for n, r in enumerate(rows):
        row = {"cluster": "c", "job_id": n, "team": r["account"], "queue": "c/p", "qos": "normal", "qos_priority": 0,
               "priority": 0, "limit_s": None, "nodes": None, "hosts": None, "observed_start_s": None,
               "pinned": False, "head": True, **r}
        row.setdefault("work_s", row["run_s"])
        full.append(row)
    return pl.DataFrame(full, schema=REPLAY_JOBS, orient="row")


def _starts(result: ReplayResult, job: int) -> list[float]:
    return [s for i, _q, s, _e in result.segments if i == job]


def test_a_job_waits_for_its_own_limit_and_then_for_priority_order() -> None:
    jobs = _jobs([
        {"account": "a", "submit_s": 0.0, "run_s": 100.0, "gpus": 2},
        {"account": "a", "submit_s": 0.0, "run_s": 100.0, "gpus": 2},  # a's limit is 2: waits until 100
        {"account": "b", "submit_s": 10.0, "run_s": 50.0, "gpus": 2, "qos_priority": 10},
    ])
    assert replay_cluster(jobs, 4, {"a": 2}).tolist() == [0.0, 100.0, 10.0]
    assert replay_cluster(jobs, 4, {"a": 4}).tolist() == [0.0, 0.0, 100.0]  # now b waits for capacity


def test_higher_qos_goes_first_when_gpus_free_up() -> None:
    jobs = _jobs([
        {"account": "a", "submit_s": 0.0, "run_s": 100.0, "gpus": 4},
        {"account": "a", "submit_s": 1.0, "run_s": 10.0, "gpus": 4},
        {"account": "b", "submit_s": 2.0, "run_s": 10.0, "gpus": 4, "qos_priority": 5},
    ])
    assert replay_cluster(jobs, 4, {}).tolist() == [0.0, 110.0, 100.0]


def test_a_job_that_started_before_the_window_keeps_its_start() -> None:
    jobs = _jobs([
        {"account": "a", "submit_s": -50.0, "run_s": 30.0, "gpus": 4, "observed_start_s": 0.0, "pinned": True},
        {"account": "b", "submit_s": 0.0, "run_s": 10.0, "gpus": 1},
    ])
    assert replay_cluster(jobs, 4, {}).tolist() == [0.0, 30.0]


def test_free_gpus_scattered_over_nodes_do_not_run_a_job_that_needs_one_node() -> None:
    # Two jobs that started before the window hold 2 GPUs on each of two 4-GPU nodes: 4 GPUs are free,
    # but no node has 4. In a pool of 8 GPUs the 4-GPU job would start at once.
    model = ClusterModel((4, 4), ("n1", "n2"))
    jobs = _jobs([
        {"account": "a", "submit_s": -10.0, "run_s": 100.0, "gpus": 2, "observed_start_s": 0.0, "pinned": True,
         "hosts": "n1", "nodes": 1},
        {"account": "a", "submit_s": -10.0, "run_s": 50.0, "gpus": 2, "observed_start_s": 0.0, "pinned": True,
         "hosts": "n2", "nodes": 1},
        {"account": "b", "submit_s": 5.0, "run_s": 10.0, "gpus": 4},
    ])
    assert replay_cluster(jobs, model, {}).tolist() == [0.0, 0.0, 50.0]
    assert replay_cluster(jobs, 8, {}).tolist() == [0.0, 0.0, 5.0]


def test_best_fit_packs_small_jobs_onto_one_node_leaving_a_whole_node_free() -> None:
    jobs = _jobs([
        {"account": "a", "submit_s": 0.0, "run_s": 100.0, "gpus": 2},
        {"account": "a", "submit_s": 1.0, "run_s": 100.0, "gpus": 2},
        {"account": "b", "submit_s": 2.0, "run_s": 10.0, "gpus": 4},
    ])
    result = replay_segments(jobs, ClusterModel((4, 4)), {})
    assert [s for _i, _q, s, _e in sorted(result.segments)] == [0.0, 1.0, 2.0]
    nodes = {i: p for (i, *_rest), p in zip(result.segments, result.placements, strict=True)}
    assert nodes[0] == nodes[1] == ((0, 2),)  # the two 2-GPU jobs share a node
    assert nodes[2] == ((1, 4),)


def test_a_multi_node_job_needs_its_share_free_on_each_of_its_nodes() -> None:
    jobs = _jobs([
        {"account": "a", "submit_s": 0.0, "run_s": 100.0, "gpus": 1},
        {"account": "b", "submit_s": 1.0, "run_s": 10.0, "gpus": 8, "nodes": 2},
    ])
    assert replay_cluster(jobs, ClusterModel((4, 4, 4)), {}).tolist() == [0.0, 1.0]  # two whole nodes are free
    assert replay_cluster(jobs, ClusterModel((4, 4)), {}).tolist() == [0.0, 100.0]


def test_a_qos_limit_holds_jobs_of_every_account_in_that_qos() -> None:
    model = ClusterModel((8,), qos_limits={"low": 2})
    jobs = _jobs([
        {"account": "a", "submit_s": 0.0, "run_s": 100.0, "gpus": 2, "qos": "low"},
        {"account": "b", "submit_s": 1.0, "run_s": 10.0, "gpus": 2, "qos": "low"},
        {"account": "b", "submit_s": 2.0, "run_s": 10.0, "gpus": 2, "qos": "normal"},
    ])
    assert replay_cluster(jobs, model, {}).tolist() == [0.0, 100.0, 2.0]


def test_a_childs_job_waits_on_its_parents_limit_though_its_own_has_room() -> None:
    model = ClusterModel((16,), parents={"a": "p", "b": "p"}, account_limits={"p": 4})
    jobs = _jobs([
        {"account": "a", "submit_s": 0.0, "run_s": 100.0, "gpus": 2},
        {"account": "b", "submit_s": 1.0, "run_s": 100.0, "gpus": 2},
        {"account": "a", "submit_s": 2.0, "run_s": 10.0, "gpus": 2},
        {"account": "c", "submit_s": 3.0, "run_s": 10.0, "gpus": 2},
    ])
    assert replay_cluster(jobs, model, {"a": 8}).tolist() == [0.0, 1.0, 100.0, 3.0]
    assert replay_cluster(jobs, model, {"a": 8, "p": 6}).tolist() == [0.0, 1.0, 2.0, 3.0]  # the plan raises p


def test_preemption_requeues_the_victim_which_resumes_with_the_time_it_had_left() -> None:
    rules = PreemptionRules({"high": frozenset({"low"})}, {"low": True})
    jobs = _jobs([
        {"account": "a", "submit_s": 0.0, "run_s": 100.0, "gpus": 4, "qos": "low"},
        {"account": "b", "submit_s": 10.0, "run_s": 30.0, "gpus": 4, "qos": "high", "qos_priority": 10},
    ])
    result = replay_segments(jobs, ClusterModel((4,), rules=rules), {})
    assert sorted(result.segments) == [(0, 0.0, 0.0, 10.0), (0, 10.0, 40.0, 130.0), (1, 10.0, 10.0, 40.0)]
    assert result.preemptions == [(0, 1, 10.0)]
    cancel = replay_segments(jobs, ClusterModel((4,), rules=PreemptionRules(rules.preempts, {"low": False})), {})
    assert sorted(cancel.segments) == [(0, 0.0, 0.0, 10.0), (1, 10.0, 10.0, 40.0)]
    # Without a rule that names low, high waits like anyone else.
    assert replay_cluster(jobs, ClusterModel((4,)), {}).tolist() == [0.0, 100.0]


def test_backfill_starts_a_short_job_but_never_one_that_would_delay_the_reserved_job() -> None:
    jobs = _jobs([
        {"account": "a", "submit_s": 0.0, "run_s": 100.0, "gpus": 2, "limit_s": 100.0},
        {"account": "b", "submit_s": 1.0, "run_s": 50.0, "gpus": 4, "limit_s": 50.0, "qos_priority": 5},
        {"account": "c", "submit_s": 2.0, "run_s": 200.0, "gpus": 2, "limit_s": 200.0},  # would run past 100
        {"account": "c", "submit_s": 3.0, "run_s": 40.0, "gpus": 2, "limit_s": 60.0},  # ends by its limit at 63
    ])
    assert replay_cluster(jobs, 4, {}).tolist() == [0.0, 100.0, 150.0, 3.0]


def test_a_requeued_job_is_replayed_once_with_the_run_time_of_all_its_records() -> None:
    jobs = _jobs([
        {"account": "a", "submit_s": 0.0, "run_s": 30.0, "gpus": 1, "work_s": 80.0},
        {"account": "a", "submit_s": 40.0, "run_s": 50.0, "gpus": 1, "head": False},
    ])
    result = replay_segments(jobs, 4, {})
    assert result.segments == [(0, 0.0, 0.0, 80.0)]


def test_outcomes_are_percentiles_of_the_waits_inside_the_window() -> None:
    jobs = _jobs([{"account": "a", "submit_s": 0.0, "run_s": 3600.0, "gpus": 1} for _ in range(5)])
    segments = replay(jobs, {"c": ClusterModel.pool(16)}, {("c", "a"): 4})
    row = outcomes(segments, 86400.0).filter(pl.col("group") == "team").row(0, named=True)
    assert row["jobs"] == 5
    assert row["wait_p95_s"] == pytest.approx(0.8 * 3600)  # waits 0, 0, 0, 0, 3600: linear p95
    assert row["gpu_hours"] == 5.0


# -- properties ------------------------------------------------------------------------------------

job_rows = st.lists(
    st.fixed_dictionaries({
        "account": st.sampled_from(ACCOUNTS),
        "submit_s": st.integers(0, 500).map(float),
        "run_s": st.integers(1, 200).map(float),
        "gpus": st.integers(1, 4),
        "qos_priority": st.sampled_from([0, 10]),
        "priority": st.integers(0, 3),
    }),
    min_size=1, max_size=25,
)
limits_of = st.fixed_dictionaries({a: st.one_of(st.none(), st.integers(4, 12)) for a in ACCOUNTS})

# Jobs of a cluster with nodes, QOS tiers, time limits and several nodes per job.
shaped_rows = st.lists(
    st.fixed_dictionaries({
        "account": st.sampled_from(ACCOUNTS),
        "qos": st.sampled_from(QOS),
        "submit_s": st.integers(0, 400).map(float),
        "run_s": st.integers(1, 200).map(float),
        "slack": st.integers(0, 100).map(float),
        "gpus": st.integers(1, 8),
        "nodes": st.integers(1, 2),
        "priority": st.integers(0, 3),
    }),
    min_size=1, max_size=25,
)
models = st.builds(
    lambda shape, parent_cap, qos_cap, preempt, requeue: ClusterModel(
        tuple(shape), parents={"a": "p", "b": "p"}, account_limits={"p": parent_cap}, qos_limits={"low": qos_cap},
        rules=PreemptionRules({"high": frozenset({"low"})} if preempt else {}, {"low": requeue})),
    st.lists(st.sampled_from([4, 8]), min_size=2, max_size=4), st.one_of(st.none(), st.integers(8, 16)),
    st.one_of(st.none(), st.integers(8, 12)), st.booleans(), st.booleans(),
)


def _shaped(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return _jobs([{**{k: v for k, v in r.items() if k != "slack"}, "qos_priority": QOS_PRIORITY[r["qos"]],
                   "nodes": min(r["nodes"], r["gpus"]), "limit_s": r["run_s"] + r["slack"]} for r in rows])


@settings(max_examples=150, deadline=None)
@given(job_rows)
def test_limits_no_running_set_can_reach_change_nothing(rows: list[dict[str, Any]]) -> None:
    # A limit binds only where the account's running GPUs plus the job's pass it: the cluster's 8
    # plus the largest job's 4 never do. (A limit of 8 can: with the account holding the whole
    # cluster, Slurm names the limit, checked before resources, and a job a limit holds reserves
    # nothing, so the backfill that follows differs.)
    jobs = _jobs(rows)
    capacity_only = replay_cluster(jobs, 8, {})
    assert replay_cluster(jobs, 8, dict.fromkeys(ACCOUNTS, 12)).tolist() == capacity_only.tolist()


@settings(max_examples=150, deadline=None)
@given(job_rows, limits_of)
def test_no_job_starts_before_it_was_submitted_nor_past_the_gpus_or_its_limit(
    rows: list[dict[str, Any]], limits: dict[str, int | None]
) -> None:
    jobs = _jobs(rows)
    start = replay_cluster(jobs, 8, limits)
    submit, run, gpus = jobs["submit_s"].to_numpy(), jobs["run_s"].to_numpy(), jobs["gpus"].to_numpy()
    account = jobs["account"].to_list()
    assert np.all(start >= submit)
    assert np.all(np.isfinite(start))  # every job fits the cluster and its limit: every job runs
    for t in set(start.tolist()):
        running = (start <= t) & (t < start + run)
        assert gpus[running].sum() <= 8
        for a in ACCOUNTS:
            mine = running & np.array([x == a for x in account])
            if limits[a] is not None:
                assert gpus[mine].sum() <= limits[a]


@settings(max_examples=200, deadline=None)
@given(shaped_rows, models, limits_of)
def test_on_nodes_no_start_before_submit_nor_past_a_node_a_limit_or_an_ancestors_limit(
    rows: list[dict[str, Any]], model: ClusterModel, limits: dict[str, int | None]
) -> None:
    jobs = _shaped(rows)
    result = replay_segments(jobs, model, limits)
    assert result == replay_segments(jobs, model, limits)  # deterministic
    account, qos, gpus = jobs["account"].to_list(), jobs["qos"].to_list(), jobs["gpus"].to_list()
    ran = [(i, q, s, e, p) for (i, q, s, e), p in zip(result.segments, result.placements, strict=True) if s < np.inf]
    for i, queued, s, e, placed in ran:
        assert s >= queued >= jobs["submit_s"][i]
        assert e >= s
        spans = max(-(-gpus[i] // max(model.node_gpus)), min(gpus[i], jobs["nodes"][i]))
        assert sum(k for _n, k in placed) == gpus[i]
        assert len(placed) == spans
    caps = {("account", a): v for a, v in limits.items() if v is not None}
    caps.update({("account", "p"): model.account_limits["p"]} if model.account_limits["p"] is not None else {})
    caps.update({("qos", "low"): model.qos_limits["low"]} if model.qos_limits["low"] is not None else {})
    for t in {s for _i, _q, s, _e, _p in ran}:
        now = [(i, p) for i, _q, s, e, p in ran if s <= t < e]
        per_node: Counter[int] = Counter()
        held: Counter[tuple[str, str]] = Counter()
        for i, placed in now:
            for n, k in placed:
                per_node[n] += k
            held[("account", account[i])] += gpus[i]
            held[("qos", qos[i])] += gpus[i]
            if account[i] in ("a", "b"):
                held[("account", "p")] += gpus[i]
        assert all(per_node[n] <= model.node_gpus[n] for n in per_node)
        assert all(held[h] <= cap for h, cap in caps.items())


@settings(max_examples=200, deadline=None)
@given(shaped_rows, models)
def test_only_a_qos_the_rules_name_is_preempted_and_a_requeued_job_gets_all_its_run_time(
    rows: list[dict[str, Any]], model: ClusterModel
) -> None:
    jobs = _shaped(rows)
    result = replay_segments(jobs, model, {})
    qos = jobs["qos"].to_list()
    for victim, preemptor, _t in result.preemptions:
        assert model.rules.may_preempt(qos[preemptor], qos[victim])
    ran: Counter[int] = Counter()  # seconds run, per job
    for i, _q, s, e in result.segments:
        if s < np.inf:
            ran[i] += round(e - s)
    preempted = {v for v, _p, _t in result.preemptions}
    for i, work in enumerate(jobs["work_s"].to_list()):
        if i not in preempted or model.rules.requeue.get(qos[i], True):
            assert ran[i] == pytest.approx(work) or (ran[i] < work and any(
                s == np.inf for j, _q, s, _e in result.segments if j == i))  # or still queued when it ended
        else:
            assert ran[i] <= work


@settings(max_examples=100, deadline=None)
@given(job_rows, limits_of)
def test_unlimited_accounts_wait_no_longer_than_in_a_capacity_only_replay_on_their_own(
    rows: list[dict[str, Any]], limits: dict[str, int | None]
) -> None:
    # With every limit lifted no job waits longer than the capacity-only replay says: they are the same
    # replay, and the limit path adds no wait of its own.
    jobs = _jobs(rows)
    unlimited = replay_cluster(jobs, 8, dict.fromkeys(ACCOUNTS))
    assert (unlimited - jobs["submit_s"].to_numpy()).tolist() == (
        replay_cluster(jobs, 8, {}) - jobs["submit_s"].to_numpy()).tolist()
    assert replay_cluster(jobs, 8, limits).tolist() == replay_cluster(jobs, 8, limits).tolist()  # deterministic


@settings(max_examples=300, deadline=None, derandomize=True)
@given(job_rows, limits_of, st.sampled_from(ACCOUNTS), st.integers(1, 4))
def test_raising_a_limit_never_delays_that_teams_jobs_in_total(
    rows: list[dict[str, Any]], limits: dict[str, int | None], account: str, more: int
) -> None:
    # The team's summed wait never grows when its own limit rises. One job of it may start later
    # (a list-scheduling anomaly: hypothesis finds such a case within a few hundred examples, where a
    # job the raise lets start earlier takes GPUs a bigger job of the same team then waits for), which
    # is why the recommender judges a change on the team's wait percentiles, never on one job. The
    # examples are fixed (derandomize) so the suite stays deterministic.
    if limits[account] is None:
        return
    jobs = _jobs(rows)
    before = replay_cluster(jobs, 8, limits)
    after = replay_cluster(jobs, 8, {**limits, account: limits[account] + more})  # type: ignore[operator]
    mine = np.array([a == account for a in jobs["account"].to_list()])
    submit = jobs["submit_s"].to_numpy()
    assert (after - submit)[mine].sum() <= (before - submit)[mine].sum() + 1e-9
