"""Energy per GPU-minute from DCGM's cumulative energy counter, with counter resets handled.

`gpu_minutes.energy_mj` keeps the counter's last value in each minute (the same from a file import,
a live scrape and a Prometheus backfill), so the increase is computed here, once, for every path:
the difference to the GPU's previous minute that had a value. A counter that went down was reset
(a driver reload or a reboot): the minute's increase is then its value since the reset, as
Prometheus' `increase()` counts it; the energy of that minute before the reset is not known and is
not guessed. A minute after a telemetry gap carries the energy of the whole gap, with
`covers_minutes` saying how many minutes that is; the first minute a query sees has no previous
value (null increase) unless one lies within `lookback` before the range.

Energy belongs to the card: on a card split into MIG instances each instance's series repeats the
card's counter, so the card's energy is the sum over `card_counted` rows, and each instance's part
of it is `energy_attributed_mj` (its share of the card).
"""

from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from gpusteward import tables
from warehouse.store import Warehouse

GPU_ENERGY = tables.schema(
    {
        "cluster": pl.Utf8,
        "host": pl.Utf8,
        "gpu": pl.Int16,
        "ts": tables.TS,
        "job_id": pl.Utf8,
        "energy_mj": pl.Float64,  # the counter's last value in the minute
        "energy_increase_mj": pl.Float64,  # since the previous minute with a value; null for the first
        "covers_minutes": pl.Int64,  # minutes since that previous value (1 without a gap)
        "counter_reset": pl.Boolean,  # the counter went down: the increase counts from the reset
        "card_gpu": pl.Int16,  # the physical card (a MIG instance's parent device)
        # True on one row per card and minute: summing the increases of these rows counts each card's
        # energy once (dcgm-exporter repeats the card's counter on every MIG instance's series)
        "card_counted": pl.Boolean,
        # the row's part of its card's energy: the increase x its whole-GPU share (a 1g.10gb instance
        # of an H100: 1/7); a card's unsplit slices keep the rest, which no instance is attributed
        "energy_attributed_mj": pl.Float64,
    }
)

LOOKBACK = timedelta(hours=6)
"""How far before a range a query looks for each GPU's previous value."""

INCREASES = """
SELECT gpu_key, ts, job_id, energy_mj,
       CASE WHEN prev_mj IS NULL THEN NULL
            WHEN energy_mj >= prev_mj THEN energy_mj - prev_mj
            ELSE energy_mj END AS energy_increase_mj,
       date_diff('minute', prev_ts, ts) AS covers_minutes,
       coalesce(energy_mj < prev_mj, false) AS counter_reset
FROM (
    SELECT gpu_key, ts, job_id, energy_mj,
           lag(energy_mj) OVER w AS prev_mj, lag(ts) OVER w AS prev_ts
    FROM gpu_minutes
    WHERE energy_mj IS NOT NULL AND ts >= ? AND ts < ?
    WINDOW w AS (PARTITION BY gpu_key ORDER BY ts)
)
WHERE ts >= ?
"""
"""Each GPU-minute's energy increase; parameters: the range's start minus the lookback, its end, its start."""

_SQL = f"""
SELECT g.cluster, g.host, g.gpu, e.ts, e.job_id, e.energy_mj, e.energy_increase_mj, e.covers_minutes, e.counter_reset,
       coalesce(g.card_gpu, g.gpu) AS card_gpu,
       row_number() OVER (PARTITION BY g.cluster, g.host, coalesce(g.card_gpu, g.gpu), e.ts ORDER BY g.gpu) = 1
           AS card_counted,
       e.energy_increase_mj * g.share AS energy_attributed_mj
FROM ({INCREASES}) e JOIN gpus g USING (gpu_key)
ORDER BY g.cluster, g.host, g.gpu, e.ts
"""  # noqa: S608 - fixed SQL


def energy_increases(
    wh: Warehouse, start: datetime, end: datetime, *, lookback: timedelta = LOOKBACK
) -> pl.DataFrame:
    """GPU_ENERGY rows for the minutes in [start, end)."""
    frame = wh.query(_SQL, [start - lookback, end, start])
    return tables.conform(frame, GPU_ENERGY) if frame.height else tables.empty(GPU_ENERGY)


def energy_kwh_by_job(wh: Warehouse, start: datetime, end: datetime) -> pl.DataFrame:
    """Known energy per job (kWh) in [start, end), with the GPU-minutes whose energy is unknown."""
    minutes = energy_increases(wh, start, end)
    return (
        minutes.group_by("job_id")
        .agg(
            (pl.col("energy_increase_mj").sum() / 3.6e9).alias("energy_kwh"),
            pl.col("energy_increase_mj").is_null().sum().alias("unknown_minutes"),
            pl.col("counter_reset").sum().alias("counter_resets"),
        )
        .sort("job_id", nulls_last=True)
    )
