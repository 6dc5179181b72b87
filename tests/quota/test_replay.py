"""The replay: golden cases and the invariants of a scheduler's limit enforcement (hypothesis)."""

from __future__ import annotations

from typing import Any

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from quota.replay import REPLAY_JOBS, outcomes, replay_cluster

ACCOUNTS = ("a", "b", "c")


def _jobs(rows: list[dict[str, Any]]) -> pl.DataFrame:
    full = [{"cluster": "c", "job_id": n, "team": r["account"], "queue": "c/p", "qos_priority": 0, "priority": 0,
             "observed_start_s": None, "pinned": False, **r} for n, r in enumerate(rows)]
    return pl.DataFrame(full, schema=REPLAY_JOBS, orient="row")


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


def test_outcomes_are_percentiles_of_the_waits_inside_the_window() -> None:
    jobs = _jobs([{"account": "a", "submit_s": 0.0, "run_s": 3600.0, "gpus": 1} for _ in range(5)])
    jobs = jobs.with_columns(pl.Series("start", replay_cluster(jobs, 16, {"a": 4})))
    row = outcomes(jobs, "start", 86400.0).filter(pl.col("group") == "team").row(0, named=True)
    assert row["jobs"] == 5
    assert row["wait_p95_s"] == pytest.approx(0.8 * 3600)  # waits 0, 0, 0, 0, 3600: linear p95
    assert row["gpu_hours"] == 5.0


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


@settings(max_examples=150, deadline=None)
@given(job_rows)
def test_limits_at_or_above_the_cluster_size_change_nothing(rows: list[dict[str, Any]]) -> None:
    jobs = _jobs(rows)
    capacity_only = replay_cluster(jobs, 8, {})
    assert replay_cluster(jobs, 8, dict.fromkeys(ACCOUNTS, 8)).tolist() == capacity_only.tolist()


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
    # aggregate holds on every example hypothesis has tried (2,000 here); the examples are fixed
    # (derandomize) so the suite stays deterministic.
    if limits[account] is None:
        return
    jobs = _jobs(rows)
    before = replay_cluster(jobs, 8, limits)
    after = replay_cluster(jobs, 8, {**limits, account: limits[account] + more})  # type: ignore[operator]
    mine = np.array([a == account for a in jobs["account"].to_list()])
    submit = jobs["submit_s"].to_numpy()
    assert (after - submit)[mine].sum() <= (before - submit)[mine].sum() + 1e-9
