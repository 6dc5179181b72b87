"""Completeness per source and cluster, and GPU-hours and waits per team."""

from __future__ import annotations

import polars as pl
import pytest

from sla.completeness import completeness
from sla.usage import queue_usage, usage_by_team
from tests.sla.builders import T0, at, config, inputs, job, minutes, window
from tests.sla.english import english


def _source(frame: pl.DataFrame, source: str) -> list[dict[str, object]]:
    return frame.filter(pl.col("source") == source).to_dicts()


def test_gpu_minutes_expected_from_inventory_up_to_data_end() -> None:
    gpus = [
        {"cluster": "east", "host": "h1", "gpu": 0, "first_seen": T0},
        {"cluster": "east", "host": "h1", "gpu": 1, "first_seen": T0},
        {"cluster": "east", "host": "h2", "gpu": 0, "first_seen": at(50)},  # installed later
    ]
    gm = (
        minutes("1", [50.0] * 20 + [None] * 30 + [50.0] * 10, gpu=0)  # silent 00:20-00:50
        + minutes("1", [50.0] * 60, gpu=1)
        + minutes(None, [50.0] * 10, host="h2", start=50)
    )
    out = completeness(inputs(gpu_minutes=gm, gpus=gpus, data_end=at(60)))
    (row,) = _source(out, "gpu_minutes")
    assert (row["cluster"], row["expected"], row["present"], row["missing"]) == ("east", 130, 100, 30)
    assert english(row["detail"]) == "longest gap: h1 GPU 0, 2026-03-01 00:20 UTC to 2026-03-01 00:50 UTC (30m)"


def test_silent_gpus_and_trailing_gaps_count() -> None:
    gpus = [{"cluster": "east", "host": "h1", "gpu": g, "first_seen": T0} for g in range(2)]
    out = completeness(inputs(gpu_minutes=minutes("1", [50.0] * 5), gpus=gpus, data_end=at(10)))
    (row,) = _source(out, "gpu_minutes")
    assert (row["expected"], row["present"], row["missing"]) == (20, 5, 15)
    assert english(row["detail"]) == "longest gap: h1 GPU 1, 2026-03-01 00:00 UTC to 2026-03-01 00:10 UTC (10m)"


def test_inference_and_jobs_completeness() -> None:
    windows = [window("chat", end, [1] * 6) for end in (5, 10, 20)] + [window("chat", 5, [1] * 6, instance="b")]
    jobs = [job(1, start=5), {**job(2, start=6), "gpus_allocated": None}]
    out = completeness(inputs(windows=windows, jobs=jobs))
    (inf,) = _source(out, "inference_windows")
    assert (inf["expected"], inf["present"], inf["missing"]) == (5, 4, 1)
    assert english(inf["detail"]) == "most missing: chat on a, 1 of 4 5-minute windows"
    (jobs_row,) = _source(out, "jobs")
    assert (jobs_row["expected"], jobs_row["present"], jobs_row["missing"]) == (2, 1, 1)


def test_queue_usage_and_usage_by_team() -> None:
    jobs = [
        job(1, start=0, end=60, gpus=2, eligible=0),
        job(2, start=30, end=90, gpus=1, eligible=0),
        job(3, account="vision", start=10, end=70, gpus=4, eligible=5),
        job(4, partition="infer", account="vision", start=0, end=None, state="RUNNING", gpus=1),
    ]
    q = queue_usage(inputs(jobs=jobs, data_end=at(120)), config())
    nlp = q.filter(pl.col("team") == "nlp").row(0, named=True)
    assert (nlp["queue"], nlp["scenario"], nlp["jobs"], nlp["started"]) == ("east/train", "training", 2, 2)
    assert nlp["gpu_hours"] == pytest.approx(3.0)
    assert nlp["wait_max_s"] == 1800.0
    usage = usage_by_team(q)
    assert usage.select("scenario", "team", "gpu_hours", "jobs").rows() == [
        ("online_inference", "vision", pytest.approx(2.0), 1),
        ("training", "nlp", pytest.approx(3.0), 2),
        ("training", "vision", pytest.approx(4.0), 1),
    ]
