"""The heatmap's cards count GPUs and GPU-hours in whole-GPU equivalents: a MIG instance is a row of its
own, counted by its share of the card."""

from __future__ import annotations

from datetime import date, datetime

import polars as pl

from dashboards import heatmap as hm
from dashboards.texts import Texts
from gpusteward import tables
from warehouse.gpu_buckets import GPU_BUCKETS, GPU_INVENTORY

DAY = date(2026, 11, 10)


def test_a_split_card_counts_one_gpu_and_its_instances_hours_by_their_share() -> None:
    inventory = pl.DataFrame({
        "cluster": ["east"] * 8, "host": ["m1"] * 7 + ["g1"], "gpu": [1001, 1002, 1003, 1004, 1005, 1006, 1007, 0],
        "share": [1 / 7] * 7 + [1.0], "first_seen": [datetime(2026, 11, 1)] * 8,
        "last_seen": [datetime(2026, 11, 30)] * 8,
    })
    # one hour of engine activity on one instance and on the whole GPU: everything else has no data
    buckets = tables.conform(pl.DataFrame({
        "cluster": ["east", "east"], "host": ["m1", "g1"], "gpu": [1001, 0], "bucket": [datetime(2026, 11, 10, 10)] * 2,
        "minutes": [60, 60], "engine_minutes": [60, 60], "engine_mean": [0.5, 0.5], "memory_minutes": [60, 60],
        "memory_mean_mib": [1024.0, 1024.0], "power_minutes": [60, 60], "power_mean_w": [100.0, 300.0],
    }), GPU_BUCKETS)
    frame = hm.cells(tables.conform(inventory, GPU_INVENTORY), buckets, "east", DAY, "UTC")
    assert frame.select(pl.struct("host", "gpu").n_unique()).item() == 8  # a row per instance
    mean, gpus, measured, missing = hm.summary(frame)
    assert mean == 0.5
    assert abs(gpus - 2.0) < 1e-9
    assert abs(measured - (1 + 1 / 7)) < 1e-9
    assert abs(missing - (2 * 24 - 1 - 1 / 7)) < 1e-9
    tx = Texts("en")
    assert (hm.amount(tx, gpus, 2), hm.amount(tx, missing, 1)) == ("2", "46.9")
