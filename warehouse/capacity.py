"""Capacity per physical card from the GPU-minutes: how long each card reported, and its power.

A card split into MIG instances reports one series per instance, each repeating the card's power;
the card still is one GPU. `card_hours` counts the minutes in which any row of the card reported
(one GPU-hour per hour, however the card is split); `instance_gpu_hours` counts the instances'
whole-GPU shares over the same minutes (a fully split card: the same; unsplit slices: less).
"""

from __future__ import annotations

from datetime import datetime

import polars as pl

from gpusteward import tables
from warehouse.store import Warehouse

CARD_HOURS = tables.schema(
    {
        "cluster": pl.Utf8,
        "host": pl.Utf8,
        "card_gpu": pl.Int16,  # the card's device index
        "instances": pl.Int64,  # rows (MIG instances, or the GPU itself) that reported
        "card_hours": pl.Float64,  # minutes with any row of the card / 60
        "instance_gpu_hours": pl.Float64,  # sum of the reporting rows' shares (at most 1) x minutes / 60
        "power_mean_w": pl.Float64,  # the card's mean power over its minutes with a power value, counted once
    }
)

_SQL = """
WITH per_minute AS (
    SELECT g.cluster, g.host, coalesce(g.card_gpu, g.gpu) AS card_gpu, m.ts,
           least(sum(g.share), 1.0) AS share, max(m.power_w) AS power_w, list(DISTINCT g.gpu) AS rows
    FROM gpu_minutes m JOIN gpus g USING (gpu_key)
    WHERE m.ts >= ? AND m.ts < ?
    GROUP BY ALL
)
SELECT cluster, host, card_gpu, len(list_distinct(flatten(list(rows)))) AS instances,
       count(*) / 60.0 AS card_hours, sum(share) / 60.0 AS instance_gpu_hours, avg(power_w) AS power_mean_w
FROM per_minute
GROUP BY ALL
ORDER BY cluster, host, card_gpu
"""


def card_hours(wh: Warehouse, start: datetime, end: datetime) -> pl.DataFrame:
    """CARD_HOURS for [start, end) (naive UTC): one row per physical card with telemetry."""
    frame = wh.query(_SQL, [start, end])
    return tables.conform(frame, CARD_HOURS) if frame.height else tables.empty(CARD_HOURS)
