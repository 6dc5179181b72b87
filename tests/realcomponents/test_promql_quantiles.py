"""Inference latency percentiles equal what PromQL `histogram_quantile` returns on a real
Prometheus holding the same vLLM samples (issue 5: numbers must equal what operators see)."""

from __future__ import annotations

import math
from datetime import UTC, datetime
from pathlib import Path

import httpx
import polars as pl
import pytest

from collectors.files import read_file, sort_for_import
from collectors.inference import WindowState
from gpusteward.domain import Month
from tests.realcomponents.conftest import vllm_files
from warehouse import open_warehouse
from warehouse.quantiles import window_quantiles

# idelta: the difference of the last two samples in the range, i.e. exactly one scrape window of a
# replica, without increase()'s extrapolation to the range edges (scrapes are jittered).
WINDOW = 'idelta(vllm:e2e_request_latency_seconds_bucket{{instance="{instance}",model_name="{service}"}}[6m])'
QUERY = (
    'label_replace(histogram_quantile(0.95, sum by (le) ({w})), "q", "p95", "", "")'
    ' or label_replace(histogram_quantile(0.99, sum by (le) ({w})), "q", "p99", "", "")'
)
SAMPLE_EVERY = 9  # windows compared per replica: every ninth keeps the test to a few seconds


def ours(sim_dir: Path, tmp_path: Path) -> pl.DataFrame:
    """p95/p99 per replica and scrape window, computed by the warehouse from the project's import."""
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        state = WindowState()
        for path in sort_for_import(vllm_files(sim_dir)):
            batch = read_file(path, inference_state=state)
            wh.ingest(str(path), batch.frames)
        windows = window_quantiles(wh, Month(2026, 10), (0.95, 0.99))
        lengths = wh.query("SELECT service, instance, ts, window_s FROM inference_windows")
    return windows.join(lengths, on=["service", "instance", "ts"])


def promql_at(url: str, service: str, instance: str, moment: datetime) -> dict[str, float]:
    query = QUERY.format(w=WINDOW.format(service=service, instance=instance))
    r = httpx.get(
        f"{url}/api/v1/query", params={"query": query, "time": moment.replace(tzinfo=UTC).timestamp()}, timeout=30
    )
    r.raise_for_status()
    return {item["metric"]["q"]: float(item["value"][1]) for item in r.json()["data"]["result"]}


def test_p95_and_p99_equal_promql_histogram_quantile(prometheus_with_vllm: str, sim_dir: Path, tmp_path: Path) -> None:
    mine = ours(sim_dir, tmp_path).filter(pl.col("window_s") == 300)  # a missed scrape has no 6m idelta
    sample = mine.filter(pl.int_range(pl.len()).over("service", "instance") % SAMPLE_EVERY == 0)
    compared = 0
    for row in sample.iter_rows(named=True):
        theirs = promql_at(prometheus_with_vllm, row["service"], row["instance"], row["ts"])
        for col in ("p95", "p99"):
            if row[col] is None:  # no request in the window: no data, and PromQL answers NaN
                assert math.isnan(theirs[col])
                continue
            assert row[col] == pytest.approx(theirs[col], rel=1e-9), (row["service"], row["instance"], row["ts"])
            compared += 1
    assert compared >= 200
