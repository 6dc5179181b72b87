"""The read model's per-GPU buckets (warehouse/gpu_series.py): what publishing them costs, first and then
once more after a day of new minutes, their Parquet size, and the heatmap's work for one day.

GPU-minutes come from bench._frames (DCGM-like values, jobs changing every few hours) through the real
ingest, a day per batch. Figures:
- `fingerprints_s`: the per-day change check every publication makes (one scan of the packed minutes);
- `first_publish_s`: every day's buckets computed and written (a version with no previous one);
- `next_publish_s`: one more day ingested, then published: that day computed, every other day linked;
- `parquet_bytes`, `bytes_per_gpu_day`, `bucket_rows`: the series on disk;
- `heatmap_day_s`: one day of every GPU read from its file, merged into hourly cells and turned into
  what the page sends (Streamlit's own conversion: the spec, and the cells as Arrow), with
  `heatmap_cells` and `heatmap_arrow_bytes`; median of 3 after one warm-up run.
Issue 23's goal for a page is 2 s on the demo month and 5 s on the 1,000-GPU month; the page's whole
load in a browser is `bench dashboard`'s. `--quick`: 64 GPUs (the demo's) for 3 days; else 1,000 GPUs for 31.
"""

from __future__ import annotations

import tempfile
import time
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from streamlit.elements.vega_charts import _convert_altair_to_vega_lite_spec as to_streamlit

from bench._frames import day_frame, last_energy
from bench.harness import timed
from dashboards import heatmap as hm
from dashboards.texts import Texts
from warehouse import open_warehouse
from warehouse.gpu_buckets import day_fingerprints, gpu_inventory
from warehouse.gpu_series import ParquetSeries, WarehouseSeries, between, write_series

START = datetime(2026, 10, 1)


def run(quick: bool) -> dict[str, Any]:
    gpus, days = (64, 3) if quick else (1000, 31)
    with tempfile.TemporaryDirectory(prefix="gpusteward-gpu-series-") as tmp:
        base = Path(tmp)
        with open_warehouse(base / "w.duckdb") as wh:
            energy = None
            for day in range(days):
                frame = day_frame(day, gpus, start=START, energy0=energy)
                energy = last_energy(frame, gpus)
                wh.ingest(f"bench-day-{day}", {"gpu_minutes": frame})
                del frame
            started = time.perf_counter()
            marks = day_fingerprints(wh)
            fingerprints_s = time.perf_counter() - started
            started = time.perf_counter()
            first = write_series(WarehouseSeries(wh, marks), base / "v1", None)
            first_s = time.perf_counter() - started
            frame = day_frame(days, gpus, start=START, energy0=energy)
            wh.ingest("bench-next-day", {"gpu_minutes": frame})
            del frame
            started = time.perf_counter()
            second = write_series(WarehouseSeries.of(wh), base / "v2", (base / "v1", first.index))
            next_s = time.perf_counter() - started
            inventory = gpu_inventory(wh)
        files = list((base / "v2").rglob("*.parquet"))
        size = sum(p.stat().st_size for p in files)
        series = ParquetSeries(base / "v2", second.index)
        shown = (START + timedelta(days=1)).date()
        lo, hi = hm.day_bounds(shown, "UTC")

        def page() -> tuple[int, dict[str, Any]]:
            cells = hm.cells(inventory, between(series, lo, hi, cluster="bench"), "bench", shown, "UTC")
            return cells.height, to_streamlit(hm.chart(cells, Texts("en")))

        page()  # Altair loads its schema once per process, as a running dashboard already has
        heatmap = timed(page, runs=3)
        cells, spec = page()
        rows = sum(len(between(series, *hm.day_bounds(d, "UTC"))) for d in sorted(series.fingerprints()))
    return {
        "benchmark": "gpu_series",
        "gpus": gpus,
        "days": days + 1,
        "fingerprints_s": round(fingerprints_s, 3),
        "first_publish_s": round(first_s, 2),
        "first_days_computed": first.computed,
        "next_publish_s": round(next_s, 2),
        "next_days_computed": second.computed,
        "next_days_linked": second.linked,
        "parquet_bytes": size,
        "bytes_per_gpu_day": round(size / (gpus * (days + 1)), 1),
        "bucket_rows": rows,
        "heatmap_day_s": heatmap.as_dict(),
        "heatmap_cells": cells,
        "heatmap_arrow_bytes": sum(len(v) for v in spec["datasets"].values()),
        "goal_heatmap_s": "<= 2 (demo month), <= 5 (1,000 GPUs)",
        "met": heatmap.median_s <= (2.0 if gpus <= 64 else 5.0),
    }
