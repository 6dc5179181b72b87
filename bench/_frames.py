"""Synthetic GPU-minute frames in the `GPU_MINUTES` contract, shaped like DCGM data (shared by benches).

Not a benchmark itself: bench.harness skips modules whose name starts with an underscore.
Each GPU alternates jobs and unallocated gaps; inside a job it alternates busy and idle minutes
(the simulator's two-state training mixture). Values carry the noise real exporters show: power
in milliwatt steps, the graphics-engine ratio as a free float, integer temperatures, a cumulative
energy counter.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import numpy as np
import polars as pl

from gpusteward import tables

MINUTES = 1440
FB_TOTAL_MIB = 81_559.0


def _segments(rng: np.random.Generator, gpus: int, minutes: int, mean: float) -> np.ndarray:
    """Segment ids along each row: run lengths drawn exponentially with the given mean."""
    lengths = rng.exponential(mean, size=(gpus, minutes // 2 + 2)).astype(np.int64) + 1
    ends = np.cumsum(lengths, axis=1)
    idx = np.arange(minutes)
    return np.stack([np.searchsorted(ends[g], idx, side="right") for g in range(gpus)])


def day_frame(
    day: int, gpus: int, *, start: datetime, seed: int = 1, energy0: np.ndarray | None = None
) -> pl.DataFrame:
    """One day of GPU-minutes for `gpus` GPUs (8 per host), sorted by GPU and time."""
    rng = np.random.default_rng(seed * 1_000_003 + day)
    job_seg = _segments(rng, gpus, MINUTES, 240.0)
    allocated = (job_seg % 4) != 3  # about three quarters of the time a job holds the GPU
    busy = allocated & ((_segments(rng, gpus, MINUTES, 20.0) % 3) != 0)
    level = rng.uniform(0.35, 0.8, size=(gpus, job_seg.max() + 1))
    engine = np.where(busy, np.take_along_axis(level, job_seg, axis=1) + rng.normal(0, 0.02, busy.shape), 0.0)
    util = np.where(busy, rng.integers(93, 101, busy.shape), 0).astype(np.float32)
    fb_share = rng.uniform(0.4, 0.9, size=(gpus, job_seg.max() + 1))
    fb_used = np.where(allocated, np.round(np.take_along_axis(fb_share, job_seg, axis=1) * FB_TOTAL_MIB), 0.0)
    power = np.round(np.where(busy, 250 + 450 * engine, 62.0) + rng.normal(0, 3, busy.shape), 3)
    temp = np.round(np.where(busy, 55 + 25 * engine, 34.0) + rng.normal(0, 0.6, busy.shape))
    base = energy0 if energy0 is not None else np.zeros(gpus)
    energy = base[:, None] + np.cumsum(power * 60_000.0, axis=1)  # mJ counter
    job_ids = np.where(allocated, (day * 100_000 + job_seg * 1_000 + np.arange(gpus)[:, None] // 8), -1)
    ts0 = start + timedelta(days=day)
    ts = pl.datetime_range(ts0, ts0 + timedelta(minutes=MINUTES - 1), "1m", eager=True, time_unit="us")
    frame = pl.DataFrame(
        {
            "cluster": "bench",
            "host": np.repeat([f"node-{g // 8:04d}" for g in range(gpus)], MINUTES),
            "gpu": np.repeat(np.arange(gpus) % 8, MINUTES),
            "uuid": np.repeat([f"GPU-{g:08x}" for g in range(gpus)], MINUTES),
            "model_name": "NVIDIA H100 80GB HBM3",
            "ts": pl.concat([ts] * gpus),
            "job_id": pl.Series(job_ids.ravel()).cast(pl.Utf8).replace("-1", None),
            "gpu_util": util.ravel(),
            "gr_engine_active": engine.ravel(),
            "fb_used_mib": fb_used.ravel(),
            "fb_free_mib": (FB_TOTAL_MIB - fb_used).ravel(),
            "power_w": power.ravel(),
            "temp_c": temp.ravel(),
            "energy_mj": energy.ravel(),
            "xid": pl.Series([None] * (gpus * MINUTES), dtype=pl.Int32),
        }
    )
    return tables.conform(frame, tables.GPU_MINUTES)


def last_energy(frame: pl.DataFrame, gpus: int) -> np.ndarray:
    """Each GPU's counter at the end of the frame, to continue it the next day."""
    values: np.ndarray = frame["energy_mj"].to_numpy().reshape(gpus, -1)[:, -1]
    return values


def minute_frame(minute: int, gpus: int, *, start: datetime) -> pl.DataFrame:
    """One scrape cycle's worth of GPU-minutes (one row per GPU) at `start + minute`."""
    rng = np.random.default_rng(minute)
    busy = rng.random(gpus) < 0.6
    frame = pl.DataFrame(
        {
            "cluster": "bench",
            "host": [f"node-{g // 8:04d}" for g in range(gpus)],
            "gpu": np.arange(gpus) % 8,
            "uuid": [f"GPU-{g:08x}" for g in range(gpus)],
            "model_name": "NVIDIA H100 80GB HBM3",
            "ts": [start + timedelta(minutes=minute)] * gpus,
            "job_id": [str(1000 + g // 8) if b else None for g, b in enumerate(busy)],
            "gpu_util": np.where(busy, 97.0, 0.0),
            "gr_engine_active": np.where(busy, rng.uniform(0.35, 0.8, gpus), 0.0),
            "fb_used_mib": np.where(busy, 60_000.0, 0.0),
            "fb_free_mib": np.where(busy, FB_TOTAL_MIB - 60_000.0, FB_TOTAL_MIB),
            "power_w": np.round(np.where(busy, 450.0, 62.0) + rng.normal(0, 3, gpus), 3),
            "temp_c": np.where(busy, 70.0, 34.0),
            "energy_mj": 1e9 + minute * 27e6 + np.arange(gpus),
            "xid": pl.Series([None] * gpus, dtype=pl.Int32),
        }
    )
    return tables.conform(frame, tables.GPU_MINUTES)
