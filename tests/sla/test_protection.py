"""The inference reserve line: minutes below the reserve merge into episodes that name the holders."""

from __future__ import annotations

from datetime import timedelta

import polars as pl

from sla.common import Window
from sla.protection import cluster_gpus, held_per_minute, inference_reserve_episodes
from tests.sla.builders import T0, at, config, inputs, job
from tests.sla.english import english

LINE = """
[[protection.inference_reserve]]
cluster = "east"
min_gpus = 10
for = "10m"
severity = "critical"
fallback = "Pause training on east."
"""


def test_training_that_takes_the_reserve_is_an_episode_naming_it() -> None:
    jobs = [
        job(10, partition="infer", account="vision", start=0, end=None, state="RUNNING", gpus=6),
        # The big training job: with it, 16 - 8 = 8 GPUs left for inference, below 10, for 60 minutes.
        job(20, start=30, end=90, gpus=8),
        # A small one before: 16 - 2 = 14, no breach.
        job(21, account="vision", start=0, end=20, gpus=2),
        # Inference replica preempted when the training job started.
        job(11, partition="infer", account="vision", start=0, end=31, state="PREEMPTED", gpus=2),
    ]
    out = inference_reserve_episodes(inputs(jobs=jobs, data_end=at(200)), config(LINE))
    assert out.height == 1
    ep = out.row(0, named=True)
    assert (ep["line"], ep["subject"], ep["start"], ep["end"], ep["minutes"]) == (
        "inference_reserve", "east", at(30), at(90), 60)
    assert (ep["worst_value"], ep["threshold"], ep["severity"], ep["fallback"]) == (
        8.0, 10.0, "critical", "Pause training on east.")
    assert english(ep["evidence"]) == (
        "16 GPUs in the cluster; held by other work: job 20 (Training, nlp, 8 GPUs from 2026-03-01 00:30 UTC); "
        "inference preempted: job 11 at 2026-03-01 00:31 UTC"
    )


def test_short_dips_do_not_count_and_partial_minutes_do() -> None:
    jobs = [
        job(1, start=0, end=9, gpus=8),  # 9 minutes below: shorter than `for`
        job(2, start=20, end=29.5, gpus=8),  # 9.5 minutes: touches 10 minutes -> an episode of 10
    ]
    out = inference_reserve_episodes(inputs(jobs=jobs, data_end=at(60)), config(LINE))
    assert out.select("start", "minutes").rows() == [(at(20), 10)]


def test_consecutive_holders_merge_into_one_episode() -> None:
    jobs = [job(1, start=0, end=15, gpus=7), job(2, start=15, end=40, gpus=7)]
    out = inference_reserve_episodes(inputs(jobs=jobs, data_end=at(60)), config(LINE))
    assert out.select("start", "end", "minutes", "worst_value").rows() == [(at(0), at(40), 40, 9.0)]
    assert "job 2 (Training" in english(out["evidence"][0])
    assert "job 1 (Training" in english(out["evidence"][0])


def test_running_job_breaches_until_the_end_of_data() -> None:
    out = inference_reserve_episodes(
        inputs(jobs=[job(1, start=50, end=None, state="RUNNING", gpus=12)], data_end=at(100)), config(LINE))
    assert out.select("start", "end").rows() == [(at(50), at(100))]


def test_cluster_size_from_inventory_when_not_configured() -> None:
    cfg = config(LINE.replace('cluster = "east"', 'cluster = "west"') + '\n[[clusters]]\nname = "west"\n')
    gpus = [{"cluster": "west", "host": "h", "gpu": g, "first_seen": T0} for g in range(4)]
    data = inputs(jobs=[job(1, cluster="west", start=0, end=30, gpus=1)], gpus=gpus, data_end=at(60))
    assert cluster_gpus(data, cfg, "west") == 4
    out = inference_reserve_episodes(data, cfg)
    # 4 GPUs can never hold a reserve of 10: the whole hour is one episode.
    assert out.select("minutes", "worst_value").rows() == [(60, 3.0)]


def test_held_per_minute_sweep() -> None:
    holders = pl.DataFrame({"first": [at(0), at(1)], "last": [at(2), at(3)], "gpus_allocated": [1, 2]})
    per = held_per_minute(holders, Window(T0, T0 + timedelta(minutes=4)))
    assert per["held"].to_list() == [1, 3, 2, 0]


def test_no_lines_no_episodes() -> None:
    out = inference_reserve_episodes(inputs(jobs=[job(1, gpus=16)]), config())
    assert out.height == 0
