"""The Prometheus-API backfill of vLLM histograms equals the direct import of the same dumps."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from collectors.backfill_inference import backfill_inference
from collectors.inference import WindowState
from collectors.promapi import PromClient
from service.importer import import_files
from tests.realcomponents.conftest import DAYS, START, vllm_files
from warehouse import open_warehouse

BEGIN = datetime(START.year, START.month, START.day)
END = BEGIN + timedelta(days=DAYS + 1)  # past the last scrape
QUERY = "SELECT * FROM inference_windows ORDER BY cluster, service, instance, ts"


def direct(sim_dir: Path, db: Path) -> pl.DataFrame:
    with open_warehouse(db) as wh:
        summary = import_files(wh, vllm_files(sim_dir))
        assert summary.errors == []
        return wh.query(QUERY)


def test_api_backfill_of_inference_equals_direct_import(
    prometheus_with_vllm: str, sim_dir: Path, tmp_path: Path
) -> None:
    expected = direct(sim_dir, tmp_path / "direct.duckdb")
    assert expected.height > 1000
    source = f"promapi:{prometheus_with_vllm}"
    state = WindowState()
    with PromClient(prometheus_with_vllm) as client, open_warehouse(tmp_path / "api.duckdb") as wh:
        convention = client.flavor()
        for chunk in backfill_inference(client, BEGIN, END, convention=convention, state=state, chunk_minutes=180):
            wh.ingest(source, chunk.batch.frames, [str(p) for p in chunk.batch.problems])
        got = wh.query(QUERY)
    assert_frame_equal(got, expected)


def half_day(url: str, chunk_minutes: int) -> pl.DataFrame:
    frames = []
    with PromClient(url) as client:
        convention = client.flavor()
        end = BEGIN + timedelta(hours=12)
        for chunk in backfill_inference(client, BEGIN, end, convention=convention, chunk_minutes=chunk_minutes):
            frames.append(chunk.batch.frames["inference_windows"])
    return pl.concat(frames).sort("cluster", "service", "instance", "ts")


def test_chunk_boundaries_neither_lose_nor_double_a_sample(prometheus_with_vllm: str) -> None:
    """Half a day in 7-minute chunks equals the same half day in one chunk."""
    whole = half_day(prometheus_with_vllm, 720)
    assert whole.height > 100
    assert whole.filter(pl.col("requests") < 0).height == 0
    assert_frame_equal(half_day(prometheus_with_vllm, 7), whole)
