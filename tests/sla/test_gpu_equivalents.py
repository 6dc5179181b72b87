"""Allocation counted in whole-GPU equivalents (issue 25): MIG slices and time-sliced GPUs by their
fraction in usage, fairness and the cluster's capacity; whole GPUs exactly as before."""

from __future__ import annotations

import pytest

from sla.fairness import cluster_gpus, shares_of
from sla.usage import queue_usage
from tests.sla.builders import config, inputs, job

SHARED = """
[[capacity.shared]]
hosts = "nb-*"
replicas = 4
"""


def gpu_hours(rows: list[dict[str, object]], extra: str = "") -> float:
    return float(queue_usage(inputs(jobs=rows), config(extra))["gpu_hours"].sum())


def test_a_fully_split_card_counts_one_gpu_hour_per_hour() -> None:
    # seven 1g.10gb jobs for an hour each on one H100: gres/gpu 1 each, 1/7 of a card each
    split = [job(i, end=60, nodes="mig-01", gpu_equivalents=1 / 7) for i in range(1, 8)]
    assert gpu_hours(split) == pytest.approx(1.0)
    assert gpu_hours([job(1, end=60, gpus=2)]) == 2.0  # whole GPUs: gpus_allocated, as before


def test_time_sliced_allocations_count_their_fraction_where_the_config_says_so() -> None:
    notebooks = [job(i, partition="interactive", end=60, nodes="nb-03") for i in range(1, 5)]
    assert gpu_hours(notebooks) == 4.0  # nothing configured: each holds a GPU
    assert gpu_hours(notebooks, SHARED) == pytest.approx(1.0)  # four replicas of one card
    elsewhere = [job(9, end=60, nodes="gpu-01")]
    assert gpu_hours(elsewhere, SHARED) == 1.0
    scheduler_said = [job(10, end=60, nodes="nb-01", gpu_equivalents=0.5)]
    assert gpu_hours(scheduler_said, SHARED) == 0.5  # the scheduler's own fraction wins


def test_a_split_card_is_one_gpu_of_the_clusters_capacity_and_of_its_fair_shares() -> None:
    gpus = [{"cluster": "north", "host": "h", "gpu": g, "card_gpu": 0} for g in (1001, 1005, 1013, 1014)]
    gpus += [{"cluster": "north", "host": "h", "gpu": 1, "card_gpu": 1}, {"cluster": "north", "host": "g", "gpu": 0}]
    cfg = config()  # east has 16 GPUs configured; north counts the cards its telemetry showed
    assert cluster_gpus(cfg, inputs(gpus=gpus).gpus) == {"north": 3, "east": 16}
    rows = [job(i, end=60 * 24 * 31, nodes="h", gpu_equivalents=1 / 7) for i in range(1, 8)]
    shares = shares_of(inputs(jobs=rows, gpus=gpus), cfg)
    assert shares.filter(shares["team"] == "nlp")["gpu_hours"].item() == pytest.approx(24 * 31)
