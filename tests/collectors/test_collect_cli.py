"""`gpusteward collect --once` and `serve-fleet`'s endpoints, end to end on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, date, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors.targets import file_sd_document
from service.cli_collect import collect
from simulator.serve import LiveFleet, serving
from tests.collectors.local_http import http_server, status
from tests.collectors.test_scrape_inference import bumped, server_of
from tests.configs import config_env
from warehouse import open_warehouse

NOON = datetime(2026, 10, 1, 12, tzinfo=UTC).timestamp()


@pytest.fixture
def fleet_targets(tmp_path: Path) -> Iterator[Path]:
    # The fleet answers for one fixed moment of its plan, a minute when both nodes report.
    fleet = LiveFleet(2, 3, start=date(2026, 10, 1), days=1, clock=lambda: NOON)
    assert not fleet.plan.failures
    with serving(fleet, tmp_path / "targets.json"):
        yield tmp_path / "targets.json"


def test_collect_once_stores_good_targets_and_exits_nonzero_on_failures(fleet_targets: Path, tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    with http_server(status(500)) as bad:
        result = CliRunner(env=config_env(tmp_path)).invoke(
            collect, ["--once", "--db", str(db), "--targets", str(fleet_targets), "--target", bad, "--timeout", "5"]
        )
    assert result.exit_code == 1, result.output
    # two nodes, east's MIG node and its time-sliced node, and the bad one
    assert "scraped 4/5 targets" in result.output
    assert "HTTP 500" in result.output
    with open_warehouse(db) as wh:
        # two nodes x 8 GPUs, the MIG node x 8 instances, the time-sliced node x 2 cards; one minute each
        assert wh.count("gpu_minutes") == 26


def test_collect_needs_a_mode(tmp_path: Path) -> None:
    result = CliRunner(env=config_env(tmp_path)).invoke(collect, ["--db", str(tmp_path / "w.duckdb")])
    assert result.exit_code == 2
    assert "either --once" in result.output


def test_collect_once_scrapes_inference_targets_into_windows(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    sd = tmp_path / "inference.json"
    # Baseline, then every cumulative sample +4: one window of 4 requests per target.
    with server_of([bumped(0), bumped(4)]) as first, server_of([bumped(0), bumped(4)]) as second:
        sd.write_text(file_sd_document([([second], {"cluster": "lab"})]), encoding="utf-8")
        result = CliRunner(env=config_env(tmp_path)).invoke(collect, [
            "--once", "--db", str(db), "--inference-target", first, "--inference-targets", str(sd),
            "--inference-window", "0.05", "--cluster", "east",
        ])
    assert result.exit_code == 0, result.output
    assert "scraped 2/2 inference targets; stored 2 inference windows" in result.output
    with open_warehouse(db) as wh:
        rows = wh.query("SELECT cluster, instance, requests FROM inference_windows ORDER BY cluster")
    assert rows.rows() == [("east", first, 4.0), ("lab", second, 4.0)]


def test_collect_once_fails_when_an_inference_target_fails(tmp_path: Path) -> None:
    with server_of([bumped(0), bumped(1)]) as good, http_server(status(503)) as bad:
        result = CliRunner(env=config_env(tmp_path)).invoke(collect, [
            "--once", "--db", str(tmp_path / "w.duckdb"), "--inference-target", good, "--inference-target", bad,
            "--inference-window", "0",
        ])
    assert result.exit_code == 1, result.output
    assert "scraped 1/2 inference targets; stored 1 inference windows" in result.output
    assert "503" in result.output


def test_collect_once_without_any_target_says_what_to_give(tmp_path: Path) -> None:
    result = CliRunner(env=config_env(tmp_path)).invoke(collect, ["--once", "--db", str(tmp_path / "w.duckdb")])
    assert result.exit_code == 2
    assert "--inference-target" in result.output
