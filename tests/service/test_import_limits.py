"""`gpusteward import` reads files within the config's `[limits]` (issue 17)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gpusteward.config.limits import LimitsConfig
from gpusteward.config.schema import Config
from service.importer import import_files
from warehouse import open_warehouse

LINE = 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",modelName="H100",Hostname="h",pod="%s"} 5\n'


def test_a_line_past_the_configured_limit_is_refused_and_the_other_file_stored(tmp_path: Path) -> None:
    (tmp_path / "short.prom").write_text(LINE % "p")
    (tmp_path / "long.prom").write_text(LINE % ("p" * 300))
    config = replace(Config(), limits=LimitsConfig(max_line_length=200))
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        summary = import_files(wh, [tmp_path / "short.prom", tmp_path / "long.prom"], config=config)
        assert summary.files_ok == 1
        assert summary.errors == [
            f"{tmp_path / 'long.prom'}:1: line longer than 200 characters (limits.max_line_length)"
        ]
        assert wh.query("SELECT count(*) FROM gpu_minutes").item() == 1
