"""The read model carries every chart series as the warehouse computed it, in the pool's zone and with the
config's rules, through publish and load (Parquet) unchanged."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from gpusteward import tables
from gpusteward.config.schema import Config, RuleConfig, RuleMatch
from gpusteward.domain import Month, Scenario
from tests.reports.fixtures import MONTH, demo_outputs
from warehouse import Warehouse
from warehouse.readmodel import load_read_model, publish, snapshot
from warehouse.series_allocation import allocation_hourly
from warehouse.series_daily import idle_daily, preemptions_daily
from warehouse.series_inference import inference_hourly

ZONE = "Asia/Shanghai"
CONFIG = Config(timezone=ZONE, rules=[RuleConfig(scenario=Scenario.TRAINING, match=RuleMatch(partition="train"))])


def test_every_series_survives_publish_and_load(wh: Warehouse, tmp_path: Path) -> None:
    t = datetime(2026, 11, 5, 3)
    minutes = tables.conform(pl.DataFrame([
        {"cluster": "east", "host": "a", "gpu": 0, "ts": t + timedelta(minutes=i), "job_id": "1",
         "gr_engine_active": 0.25} for i in range(90)
    ]), tables.GPU_MINUTES)
    jobs = tables.conform(pl.DataFrame([
        {"cluster": "east", "job_id": 1, "partition": "train", "submit_time": t, "start_time": t,
         "end_time": t + timedelta(minutes=90), "state": "PREEMPTED", "gpus_allocated": 1},
    ]), tables.JOBS)
    windows = tables.conform(pl.DataFrame([
        {"cluster": "east", "service": "chat", "instance": "r1", "ts": t + timedelta(minutes=5), "requests": 4.0,
         "e2e_le": [0.5, float("inf")], "e2e_counts": [3.0, 4.0]},
    ]), tables.INFERENCE_WINDOWS)
    wh.ingest("test", {"gpu_minutes": minutes, "jobs": jobs, "inference_windows": windows})
    daily = pl.DataFrame([{"day": date(2026, 11, 5), "scenario": "training", "team": "nlp", "gpu_hours": 1.5,
                           "util_minutes": 90, "util_mean": 0.25, "idle_minutes": 0, "idle_held_minutes": 45}])
    wh.store_month_outputs(replace(demo_outputs(), daily_usage=daily))

    publish(snapshot(wh, now=datetime(2026, 12, 1), config=CONFIG), tmp_path / "rm")
    model = load_read_model(tmp_path / "rm")
    local = MONTH.in_zone(ZONE)
    expected = {
        "allocation_hourly": allocation_hourly(wh, local, CONFIG),
        "inference_hourly": inference_hourly(wh, local),
        "idle_daily": idle_daily(wh, local),
        "preemptions_daily": preemptions_daily(wh, local, CONFIG),
    }
    for name, frame in expected.items():
        assert frame.height, name  # each series has rows here, so the comparison means something
        assert_frame_equal(getattr(model, name)(MONTH), frame, check_exact=True)
    assert set(model.allocation_hourly(MONTH)["zone"]) == {ZONE}
    assert model.idle_daily(MONTH)["idle_held_gpu_hours"].to_list() == [0.75]
    assert model.preemptions_daily(MONTH).select("scenario", "preempted").rows() == [("training", 1)]


def test_a_writer_recomputes_only_the_newest_months_series(wh: Warehouse) -> None:
    """The service publishes every few minutes: past months' series come from its previous version."""
    months = [Month(2026, 9), Month(2026, 10), MONTH]
    for month in months:
        wh.store_month_outputs(replace(demo_outputs(), month=month))

    def minutes_at(t: datetime) -> None:
        frame = tables.conform(pl.DataFrame([{"cluster": "east", "host": "a", "gpu": 0, "ts": t, "job_id": "1"}]),
                               tables.GPU_MINUTES)
        wh.ingest(str(t), {"gpu_minutes": frame})

    minutes_at(datetime(2026, 9, 3))
    first = snapshot(wh, config=CONFIG)
    assert first.allocation_hourly(months[0]).height == 1
    # Late data for September, new data for October and November.
    for t in (datetime(2026, 9, 4), datetime(2026, 10, 4), datetime(2026, 11, 4)):
        minutes_at(t)
    again = snapshot(wh, config=CONFIG, previous=first)
    assert again.allocation_hourly(months[0]).equals(first.allocation_hourly(months[0]))  # lent, not rescanned
    assert [again.allocation_hourly(m).height for m in months[1:]] == [1, 1]  # the newest two: computed again
    assert snapshot(wh, config=CONFIG).allocation_hourly(months[0]).height == 2  # a fresh writer scans it all
