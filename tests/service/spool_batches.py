"""Synthetic scrape batches for the spool's tests: one minute of a few GPUs, values derived from the minute."""

from __future__ import annotations

from datetime import UTC, datetime

import polars as pl

from collectors.batch import CollectedBatch

SOURCE = "scrape:synthetic"


def minute_batch(minute: datetime, *, hosts: int = 2, gpus: int = 4, source: str = SOURCE) -> CollectedBatch:
    """GPU-minutes of `hosts` x `gpus` GPUs at `minute`, each value a function of the minute and the GPU."""
    ts = minute.astimezone(UTC).replace(tzinfo=None)
    index = int(minute.timestamp() // 60)
    rows = [
        {
            "cluster": "synthetic",
            "host": f"node-{h}",
            "gpu": g,
            "uuid": f"GPU-{h:04d}-{g:04d}",
            "model_name": "NVIDIA H100 80GB HBM3",
            "ts": ts,
            "job_id": f"{1000 + h}" if (index + h) % 3 else None,
            "gpu_util": float((index * 7 + h * 3 + g) % 101),
            "gr_engine_active": ((index + g) % 100) / 100,
            "fb_used_mib": float((index * 13 + g) % 81920),
            "fb_free_mib": float(81920 - (index * 13 + g) % 81920),
            "power_w": 100.0 + (index + h + g) % 500,
            "temp_c": 30.0 + (index + g) % 50,
            "energy_mj": float(index * 60_000 + h * 1000 + g),
            "xid": None,
        }
        for h in range(hosts)
        for g in range(gpus)
    ]
    batch = CollectedBatch(source)
    batch.add("gpu_minutes", pl.DataFrame(rows))
    return batch
