"""p95 and p99 per 5-minute window for 100 services x 30 days, in the warehouse (SQL over bucket
lists), against a bare scan of the same bucket table and a numpy reference on the same counts.

Goal (issue 5): at most 12x the bare scan and at most 1.5x numpy.
"""

from __future__ import annotations

import tempfile
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from bench.harness import interleaved
from gpusteward import tables
from gpusteward.domain import Month
from sla.histogram import histogram_quantile
from warehouse import open_warehouse
from warehouse.quantiles import bucket_scan, window_quantiles

# vLLM's request-latency buckets.
LE = [0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680, float("inf")]
MONTH = Month(2026, 10)


def _windows(services: int, days: int, seed: int = 1) -> pl.DataFrame:
    rng = np.random.default_rng(seed)
    per_service = days * 288
    n = services * per_service
    # Lognormal latencies binned per window: cumulative counts, a few hundred requests each.
    requests = rng.poisson(200, n)
    medians = np.repeat(rng.uniform(0.5, 6, services), per_service)
    edges = np.log(np.array(LE[:-1]))
    probs = 0.5 * (1 + np.vectorize(_erf)((edges[None, :] - np.log(medians)[:, None]) / (0.8 * np.sqrt(2))))
    counts = np.floor(probs * requests[:, None])
    counts = np.hstack([np.maximum.accumulate(counts, axis=1), requests[:, None].astype(float)])
    start = datetime(2026, 10, 1)
    ts = [start + timedelta(minutes=5 * (k + 1)) for k in range(per_service)]
    return tables.conform(
        pl.DataFrame(
            {
                "cluster": "c",
                "service": np.repeat([f"svc-{i:03d}" for i in range(services)], per_service),
                "instance": "r0",
                "ts": ts * services,
                "window_s": 300,
                "e2e_le": [LE] * n,
                "e2e_counts": counts.tolist(),
            }
        ),
        tables.INFERENCE_WINDOWS,
    )


def _erf(x: float) -> float:
    import math

    return math.erf(x)


def run(quick: bool) -> dict[str, Any]:
    services = 10 if quick else 100
    runs = 1 if quick else 7
    frame = _windows(services, 30)
    counts = np.array(frame["e2e_counts"].to_list())
    with tempfile.TemporaryDirectory() as tmp, open_warehouse(Path(tmp) / "q.duckdb") as wh:
        wh.ingest("bench", {"inference_windows": frame})
        timings = interleaved(
            {
                "bare_scan": lambda: bucket_scan(wh, MONTH),
                "warehouse_quantiles": lambda: window_quantiles(wh, MONTH, (0.95, 0.99)),
                "numpy_reference": lambda: (histogram_quantile(0.95, LE, counts), histogram_quantile(0.99, LE, counts)),
            },
            runs=runs,
        )
        ours = window_quantiles(wh, MONTH, (0.95, 0.99))
    ref95 = histogram_quantile(0.95, LE, counts)
    same = bool(np.allclose(ours["p95"].to_numpy(), ref95, rtol=1e-12, equal_nan=True))
    w, b, r = (timings[k].median_s for k in ("warehouse_quantiles", "bare_scan", "numpy_reference"))
    return {
        "benchmark": "quantiles",
        "windows": frame.height,
        "buckets_per_window": len(LE),
        "timings": {k: t.as_dict() for k, t in timings.items()},
        "ratio_vs_bare_scan": round(w / b, 2),
        "ratio_vs_numpy": round(w / r, 2),
        "goals": {"ratio_vs_bare_scan": "<= 12", "ratio_vs_numpy": "<= 1.5"},
        "answers_equal_numpy": same,
    }
