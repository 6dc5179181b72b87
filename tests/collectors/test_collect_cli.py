"""`gpusteward collect --once` and `serve-fleet`'s endpoints, end to end on loopback."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from service.cli_collect import collect
from simulator.serve import LiveFleet, serve
from tests.collectors.local_http import http_server, status
from warehouse import open_warehouse


@pytest.fixture
def fleet_targets(tmp_path: Path) -> Iterator[Path]:
    fleet = LiveFleet(2, 3, start=date.today(), days=1)  # now is inside the plan
    server = serve(fleet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    path = tmp_path / "targets.json"
    path.write_text(fleet.targets(server.server_address[1]), encoding="utf-8")
    try:
        yield path
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_collect_once_stores_good_targets_and_exits_nonzero_on_failures(fleet_targets: Path, tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    with http_server(status(500)) as bad:
        result = CliRunner().invoke(
            collect, ["--once", "--db", str(db), "--targets", str(fleet_targets), "--target", bad, "--timeout", "5"]
        )
    assert result.exit_code == 1, result.output
    assert "scraped 2/3 targets" in result.output
    assert "HTTP 500" in result.output
    with open_warehouse(db) as wh:
        assert wh.count("gpu_minutes") in {8, 16}  # one node may be in the planted outage


def test_collect_needs_a_mode(tmp_path: Path) -> None:
    result = CliRunner().invoke(collect, ["--db", str(tmp_path / "w.duckdb")])
    assert result.exit_code == 2
    assert "either --once" in result.output
