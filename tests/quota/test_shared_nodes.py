"""The replay on a time-sliced node (issue 25): DCGM shows its cards, the scheduler runs cards x
replicas jobs there at once; its slots serve the jobs that ran there, and those jobs no other node."""

from __future__ import annotations

from typing import Any

import polars as pl

from gpusteward.config.capacity import SharedGpus
from quota.analysis import SharedNode, cluster_models, shared_node_queues
from quota.replay import REPLAY_JOBS, replay_cluster, replay_segments
from quota.replay_model import ClusterModel


def _jobs(rows: list[dict[str, Any]]) -> pl.DataFrame:
    full = []
    for n, r in enumerate(rows):
        row = {
            "cluster": "c",
            "job_id": n,
            "team": "a",
            "account": "a",
            "qos": "normal",
            "qos_priority": 0,
            "priority": 0,
            "limit_s": None,
            "nodes": 1,
            "observed_start_s": None,
            "pinned": False,
            "head": True,
            "gpus": 1,
            "run_s": 100.0,
            **r,
        }
        row.setdefault("work_s", row["run_s"])
        full.append(row)
    return pl.DataFrame(full, schema=REPLAY_JOBS, orient="row")


NOTEBOOK = {"queue": "c/interactive", "hosts": "nb-1"}
SHARED = ClusterModel((4, 8), ("n1", "nb-1"), node_queues={"nb-1": frozenset({"c/interactive"})})


def test_eight_notebooks_run_at_once_on_two_cards_shared_four_ways() -> None:
    notebooks = _jobs([{**NOTEBOOK, "submit_s": float(i)} for i in range(9)])
    starts = replay_cluster(notebooks, SHARED, {})
    assert starts.tolist() == [float(i) for i in range(8)] + [100.0]  # the ninth waits for a slot, not n1
    # Counted as the two cards telemetry shows, six of the eight would wait.
    cards = ClusterModel((4, 2), ("n1", "nb-1"))
    assert (replay_cluster(notebooks, cards, {}) > 8).sum() == 3  # two on the cards, four on n1, three wait


def test_the_shared_slots_serve_only_the_jobs_that_ran_there() -> None:
    jobs = _jobs(
        [
            {"queue": "c/train", "hosts": "n1", "gpus": 4, "submit_s": 0.0},
            {"queue": "c/train", "hosts": "n1", "gpus": 1, "submit_s": 1.0},  # n1 is full: waits, the slots are free
            {**NOTEBOOK, "submit_s": 2.0},
        ]
    )
    result = replay_segments(jobs, SHARED, {})
    starts = {i: s for i, _q, s, _e in result.segments}
    assert starts == {0: 0.0, 1: 100.0, 2: 2.0}
    nodes = {i: p for (i, *_rest), p in zip(result.segments, result.placements, strict=True)}
    assert nodes == {0: ((0, 4),), 1: ((0, 1),), 2: ((1, 1),)}  # indices of the cluster's nodes
    # Limits count each pool apart: account a's 4 GPUs on n1 do not hold its notebook back.
    assert replay_cluster(jobs, SHARED, {"a": 4}).tolist() == [0.0, 100.0, 2.0]


def test_a_shared_node_is_its_cards_times_replicas_for_the_queues_that_ran_there() -> None:
    records = pl.DataFrame(
        {
            "cluster": ["east", "east", "east", "west"],
            "partition": ["interactive", "interactive", "train", "train"],
            "nodes": ["east-nb-ts-01", "east-gpu-[01-02]", "east-gpu-01", "west-nb-ts-01"],
        }
    )
    nodes = {"east": {"east-gpu-01": 8, "east-gpu-02": 8, "east-nb-ts-01": 2}, "west": {"west-nb-ts-01": 2}}
    rules = [SharedGpus(hosts="*-nb-ts-*", replicas=4, cluster="east")]
    shared = shared_node_queues(records, rules, nodes)
    assert shared == {"east": {"east-nb-ts-01": SharedNode(4, frozenset({"east/interactive"}))}}
    models = cluster_models({"east": 18, "west": 2}, nodes, {}, {}, {}, shared)
    assert models["east"].node_gpus == (8, 8, 8)
    assert models["east"].node_queues == {"east-nb-ts-01": frozenset({"east/interactive"})}
    assert (models["west"].node_gpus, models["west"].node_queues) == ((2,), {})  # the rule is east's
    assert shared_node_queues(records, [], nodes) == {}
