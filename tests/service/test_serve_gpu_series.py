"""The service publishes the read model's GPU buckets from its snapshot, one file per UTC day of the served day's
telemetry, readable by the dashboard without the warehouse."""

from __future__ import annotations

import json
from datetime import datetime, time, timedelta

import polars as pl
import pytest

from tests.service.serve_helpers import ServedDay
from warehouse.readmodel import load_read_model

pytestmark = pytest.mark.slow  # minutes: scheduled first (tests/parallel.py)


def test_the_gpu_buckets_are_published_day_by_day(served: ServedDay) -> None:
    root = served.root / "readmodel"
    model = load_read_model(root)
    days = model.gpu_days()
    assert days, "no GPU buckets were published"
    entry = json.loads((root / model.version / "manifest.json").read_text(encoding="utf-8"))["gpu_buckets"]
    assert entry["computed"] + entry["linked"] == len(days) == len(entry["days"])
    for day in days:
        assert (root / model.version / entry["days"][day.isoformat()]["file"]).is_file()
    lo, hi = datetime.combine(days[0], time()), datetime.combine(days[-1], time()) + timedelta(days=1)
    buckets = model.gpu_buckets(lo, hi)
    assert buckets.height > 0
    assert buckets.filter(pl.col("engine_minutes") > pl.col("minutes")).is_empty()
    assert buckets.filter((pl.col("engine_mean") < 0) | (pl.col("engine_mean") > 1)).is_empty()
    assert model.gpu_inventory().height >= buckets.select("cluster", "host", "gpu").unique().height
