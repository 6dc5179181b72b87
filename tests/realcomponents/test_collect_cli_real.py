"""`gpusteward collect --prometheus URL --from --to` against a real Prometheus: resumable, progress on stderr."""

from __future__ import annotations

from datetime import date
from pathlib import Path

from click.testing import CliRunner

from service.cli_collect import collect
from tests.configs import config_env
from tests.realcomponents.conftest import DAYS, START
from warehouse import open_warehouse


def test_backfill_command_stores_then_resumes(prometheus_url: str, tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    args = ["--db", str(db), "--prometheus", prometheus_url, "--from", START.isoformat(), "--to"]
    first = CliRunner(env=config_env(tmp_path)).invoke(collect, [*args, f"{START.isoformat()}T12:00"])
    assert first.exit_code == 0, first.output
    with open_warehouse(db) as wh:
        half = wh.count("gpu_minutes")
    # two nodes, east's MIG node (8 instances) and its time-sliced node (2 cards), 12 hours
    assert half == 26 * 720
    end = START.toordinal() + DAYS
    second = CliRunner(env=config_env(tmp_path)).invoke(collect, [*args, date.fromordinal(end).isoformat()])
    assert second.exit_code == 0, second.output
    with open_warehouse(db) as wh:
        assert wh.count("gpu_minutes") > half
