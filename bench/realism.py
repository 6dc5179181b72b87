"""Realism: the default demo month through the public trace authors' summaries, beside the real ranges.

`python -m bench realism --json` prints each statistic of the simulated month (outcome shares by
count and GPU time, run and queue time median/mean/max, GPUs per job, the share of GPU time in
jobs of 8 GPUs or more, allocation, and the Kolmogorov-Smirnov distances of per-GPU-minute
GPU_UTIL, GR_ENGINE_ACTIVE and frame-buffer use to Acme's CDFs) with the lowest and highest value
the tables publish and whether it is inside. How each is computed: `simulator/realism.py`.
`--quick`: 8 days instead of the month (the month-long statistics, such as the longest run, shrink).
"""

from __future__ import annotations

import time
from datetime import date
from typing import Any

from simulator.realism import checks, month_statistics

START = date(2026, 10, 1)
SEED = 7
NODES = 8


def run(quick: bool) -> dict[str, Any]:
    days = 8 if quick else 31
    started = time.perf_counter()
    stats = month_statistics(START, days, SEED, NODES)
    rows = [c.as_dict() for c in checks(stats)]
    outside = [r["statistic"] for r in rows if r["inside"] is False]
    return {
        "month": {"start": START.isoformat(), "days": days, "seed": SEED, "nodes": NODES},
        "seconds": round(time.perf_counter() - started, 1),
        "statistics": rows,
        "outside": outside,
        "extra": {k: round(v, 4) for k, v in stats.items() if not any(r["statistic"] == k for r in rows)},
    }
