"""Bad import files give an error naming the file, the line and the problem; good rows stay."""

from __future__ import annotations

import gzip
import json
from datetime import date
from pathlib import Path

import pytest
from click.testing import CliRunner

from service.cli import cli
from simulator import simulate
from tests.configs import config_env


@pytest.fixture(scope="module")
def small_fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("fleet")
    simulate(out, date(2026, 10, 1), 2, 3, nodes=2)
    return out


def status_rows(db: Path) -> dict[str, int]:
    result = CliRunner(env=config_env(db.parent)).invoke(cli, ["status", "--db", str(db), "--json"])
    assert result.exit_code == 0, result.output
    return {name: entry["rows"] for name, entry in json.loads(result.output)["tables"].items()}


def dcgm_files(root: Path) -> list[Path]:
    return sorted((root / "dcgm").rglob("*.om.gz"))


def test_a_malformed_line_is_named_and_earlier_files_stay(small_fleet: Path, tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    good = dcgm_files(small_fleet)[0]
    ok = CliRunner(env=config_env(db.parent)).invoke(cli, ["import", "--db", str(db), str(good)])
    assert ok.exit_code == 0, ok.output
    stored = status_rows(db)["gpu_minutes"]
    assert stored > 0

    lines = gzip.decompress(good.read_bytes()).decode().splitlines(keepends=True)
    lines[41] = 'DCGM_FI_DEV_GPU_UTIL{gpu="0" oops 12 1790000000.000\n'
    bad = tmp_path / "bad.om.gz"
    bad.write_bytes(gzip.compress("".join(lines).encode()))
    result = CliRunner(env=config_env(db.parent)).invoke(cli, ["import", "--db", str(db), str(bad)])
    assert result.exit_code == 1
    assert f"{bad}:42:" in result.output
    assert status_rows(db)["gpu_minutes"] == stored


def test_a_truncated_file_is_an_error_naming_the_file(small_fleet: Path, tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    source = dcgm_files(small_fleet)[0].read_bytes()
    truncated = tmp_path / "truncated.om.gz"
    truncated.write_bytes(source[: len(source) // 2])
    cut_text = tmp_path / "cut.om"
    cut_text.write_text(gzip.decompress(source).decode()[:5000].rsplit("\n", 1)[0] + "\n")
    args = ["import", "--db", str(db), str(truncated), str(cut_text)]
    result = CliRunner(env=config_env(db.parent)).invoke(cli, args)
    assert result.exit_code == 1
    assert str(truncated) in result.output
    assert str(cut_text) in result.output
    assert status_rows(db)["gpu_minutes"] == 0


def test_malformed_sacct_json_is_named(small_fleet: Path, tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    sacct = sorted((small_fleet / "slurm").rglob("sacct-*.json.gz"))[0]
    text = gzip.decompress(sacct.read_bytes()).decode()
    broken = tmp_path / "sacct-broken.json"
    broken.write_text(text[: len(text) // 3])
    result = CliRunner(env=config_env(db.parent)).invoke(cli, ["import", "--db", str(db), str(sacct), str(broken)])
    assert result.exit_code == 1
    assert str(broken) in result.output
    assert status_rows(db)["jobs"] > 0
