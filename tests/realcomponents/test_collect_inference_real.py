"""`gpusteward collect --kind inference --prometheus URL --from --to` against a real Prometheus holding vLLM data."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from click.testing import CliRunner

from service.cli_collect import collect
from tests.configs import config_env
from tests.realcomponents.conftest import START
from warehouse import open_warehouse


def test_inference_backfill_command_stores_windows_then_resumes(prometheus_with_vllm: str, tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    begin = START.isoformat()
    args = ["--db", str(db), "--prometheus", prometheus_with_vllm, "--kind", "inference", "--from", begin, "--to"]
    first = CliRunner(env=config_env(tmp_path)).invoke(collect, [*args, f"{begin}T06:00"])
    assert first.exit_code == 0, first.output
    assert "inference windows from promapi-inference:" in first.output
    with open_warehouse(db) as wh:
        six_hours = wh.count("inference_windows")
        assert wh.count("gpu_minutes") == 0  # --kind inference reads no DCGM series
    assert six_hours > 0
    next_day = f"{(START + timedelta(days=1)).isoformat()}T00:00"
    second = CliRunner(env=config_env(tmp_path)).invoke(collect, [*args, next_day])
    assert second.exit_code == 0, second.output
    with open_warehouse(db) as wh:
        assert wh.count("inference_windows") > six_hours
