from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from service.cli import cli

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpusteward.toml"


def test_validate_config_accepts_the_example() -> None:
    result = CliRunner().invoke(cli, ["validate-config", str(EXAMPLE)])
    assert result.exit_code == 0, result.output
    assert "OK (2 clusters, 5 teams, 7 rules" in result.output


def test_validate_config_names_all_three_mistakes_and_fails(tmp_path: Path) -> None:
    text = EXAMPLE.read_text()
    text = text.replace('threshold = "8s"', 'threshold = "fast"')
    text = text.replace('path = "gpusteward.duckdb"', 'pth = "gpusteward.duckdb"')
    text = text.replace('name = "west"\ntimezone = "Asia/Shanghai"', 'name = "west"\ntimezone = "Asia/Shang"')
    broken = tmp_path / "broken.toml"
    broken.write_text(text)
    result = CliRunner().invoke(cli, ["validate-config", str(broken)])
    assert result.exit_code == 1
    assert result.output.splitlines()[1:] == [
        "  warehouse.pth: unknown field (did you mean 'path'?)",
        '  scenarios.online_inference.slos[0].threshold: expected a duration, got "fast"',
        "  clusters[1].timezone: unknown time zone 'Asia/Shang'",
    ]
    assert "3 problem(s)" in result.output
