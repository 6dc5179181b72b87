"""The read model's GPU buckets: one file per UTC day, days that did not change linked from the previous
version (never computed nor written again), read back a day at a time; and the job records, ledger and
GPU inventory the drill-down pages read."""

from __future__ import annotations

import json
import os
from datetime import datetime, timedelta
from pathlib import Path

import polars as pl

from gpusteward import tables
from tests.warehouse.test_gpu_buckets import T0, minutes
from warehouse import Warehouse
from warehouse.gpu_buckets import gpu_buckets
from warehouse.readmodel import KEEP, load_read_model, materialized, publish, snapshot

NOW = datetime(2026, 10, 4)
KEY = ["cluster", "host", "gpu", "bucket", "job_id"]


def _three_days(wh: Warehouse) -> None:
    rows = [("n1", g, d * 1440 + m, "5" if m < 120 else None, 0.5, 10.0, 100.0)
            for d in range(3) for g in range(2) for m in range(0, 240, 7)]
    wh.ingest("days", {"gpu_minutes": minutes(rows)})


def _manifest(root: Path, version: str) -> dict[str, object]:
    data = json.loads((root / version / "manifest.json").read_text())
    assert isinstance(data, dict)
    return data


def test_closed_days_are_linked_not_rewritten(wh: Warehouse, tmp_path: Path) -> None:
    _three_days(wh)
    root = tmp_path / "rm"
    first = publish(snapshot(wh, now=NOW), root)
    entry = _manifest(root, first)["gpu_buckets"]
    assert isinstance(entry, dict)
    assert (entry["computed"], entry["linked"]) == (3, 0)
    # a late minute for the last day only
    wh.ingest("late", {"gpu_minutes": minutes([("n1", 0, 2 * 1440 + 1000, None, 1.0, 1.0, 1.0)])})
    second = publish(snapshot(wh, now=NOW + timedelta(minutes=5)), root)
    entry = _manifest(root, second)["gpu_buckets"]
    assert isinstance(entry, dict)
    assert (entry["computed"], entry["linked"]) == (1, 2)
    day1 = "gpu_buckets/day=2026-10-01/part-0.parquet"
    assert os.stat(root / first / day1).st_ino == os.stat(root / second / day1).st_ino  # the same file
    day3 = "gpu_buckets/day=2026-10-03/part-0.parquet"
    assert os.stat(root / first / day3).st_ino != os.stat(root / second / day3).st_ino
    model = load_read_model(root)
    got = model.gpu_buckets(T0, T0 + timedelta(days=3))  # day by day: sorted by GPU within each day
    assert got.sort(KEY).equals(gpu_buckets(wh, T0, T0 + timedelta(days=3)).sort(KEY))
    assert model.gpu_days() == [(T0 + timedelta(days=d)).date() for d in range(3)]


def test_a_pruned_version_leaves_the_newer_ones_whole(wh: Warehouse, tmp_path: Path) -> None:
    _three_days(wh)
    root = tmp_path / "rm"
    names = [publish(snapshot(wh, now=NOW + timedelta(minutes=i)), root) for i in range(KEEP + 2)]
    assert not (root / names[0]).exists()
    model = load_read_model(root)
    assert model.version == names[-1]
    assert model.gpu_buckets(T0, T0 + timedelta(days=3)).height == gpu_buckets(wh, T0, T0 + timedelta(days=3)).height


def test_a_reader_of_a_pruned_version_reads_the_current_one(wh: Warehouse, tmp_path: Path) -> None:
    _three_days(wh)
    root = tmp_path / "rm"
    publish(snapshot(wh, now=NOW), root)
    held = load_read_model(root)  # a dashboard holding this version while the service publishes on
    for i in range(KEEP + 1):
        publish(snapshot(wh, now=NOW + timedelta(minutes=1 + i)), root)
    assert not (root / held.version).exists()
    assert held.gpu_buckets(T0, T0 + timedelta(days=1)).equals(gpu_buckets(wh, T0, T0 + timedelta(days=1)))


def test_one_job_and_one_cluster(wh: Warehouse, tmp_path: Path) -> None:
    _three_days(wh)
    publish(snapshot(wh, now=NOW), tmp_path / "rm")
    model = load_read_model(tmp_path / "rm")
    job = model.gpu_buckets(T0, T0 + timedelta(days=3), cluster="east", job_id="5")
    assert set(job["job_id"].to_list()) == {"5"}
    assert job.height == gpu_buckets(wh, T0, T0 + timedelta(days=3)).filter(pl.col("job_id") == "5").height
    assert model.gpu_buckets(T0, T0 + timedelta(days=3), cluster="west").is_empty()
    assert model.gpu_inventory().select("cluster", "host", "gpu").rows() == [("east", "n1", 0), ("east", "n1", 1)]


def test_job_records_and_ledger_are_published(wh: Warehouse, tmp_path: Path) -> None:
    from dataclasses import replace

    from sla.results import LEDGER
    from tests.reports.fixtures import MONTH, demo_outputs

    line = {"ts": datetime(2026, 11, 3), "action": "preemption", "cluster": "east", "job_id": 11, "team": "vision",
            "scenario": "training", "gpus": 8, "gpu_hours_held": 12.0, "gained_job_id": 99, "reason": "preempted"}
    outputs = replace(demo_outputs(), ledger=pl.DataFrame([line], schema=LEDGER))
    wh.store_month_outputs(outputs)
    jobs = tables.conform(pl.DataFrame({
        "cluster": ["east", "east"], "job_id": [11, 12],
        "submit_time": [datetime(2026, 11, 2), datetime(2026, 10, 1)],
        "start_time": [datetime(2026, 11, 2, 1), datetime(2026, 10, 1, 1)],
        "end_time": [None, datetime(2026, 10, 2)], "state": ["RUNNING", "COMPLETED"], "exit_code": [None, 0],
    }), tables.JOBS)
    wh.ingest("jobs", {"jobs": jobs})
    publish(snapshot(wh, now=NOW), tmp_path / "rm")
    model = load_read_model(tmp_path / "rm")
    assert model.job_records(MONTH)["job_id"].to_list() == [11]  # the October record ended before November
    ledger = model.month_outputs(MONTH).ledger
    assert ledger.select("job_id", "action", "gained_job_id").rows() == [(11, "preemption", 99)]


def test_materialized_keeps_the_buckets_after_the_warehouse_closes(wh: Warehouse) -> None:
    _three_days(wh)
    model = materialized(snapshot(wh, now=NOW))
    assert model.gpu_buckets(T0, T0 + timedelta(days=1)).equals(gpu_buckets(wh, T0, T0 + timedelta(days=1)))
