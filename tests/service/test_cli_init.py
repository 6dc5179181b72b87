"""No silent fallback to the demo pool's config, and `gpusteward init` writing a config that loads."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from gpusteward.config import load_config
from gpusteward.config.starter import StarterPartition, StarterPool, guess_scenario, render_starter
from service.cli import cli


@pytest.mark.parametrize(
    "args",
    [["status"], ["evaluate"], ["report"], ["import", "."], ["dashboard"], ["alerts", "test"], ["collect", "--once"],
     ["quota", "plan"]],
)
def test_a_command_without_a_config_says_how_to_start(args: list[str], tmp_path: Path) -> None:
    result = CliRunner(env={"GPUSTEWARD_CONFIG": None}).invoke(cli, args)
    assert result.exit_code == 2, result.output
    assert "no config: pass --config FILE or set $GPUSTEWARD_CONFIG" in result.output
    assert "gpusteward init" in result.output


def test_init_writes_a_commented_template_that_loads(tmp_path: Path) -> None:
    out = tmp_path / "gpusteward.toml"
    result = CliRunner().invoke(cli, ["init", "--out", str(out), "--timezone", "Europe/Berlin"])
    assert result.exit_code == 0, result.output
    config = load_config(out)
    assert [c.timezone for c in config.clusters] == ["Europe/Berlin"]
    assert config.reports.timezone == "Europe/Berlin"
    assert sum(t.entitled_share for t in config.teams.values()) == pytest.approx(1.0)
    text = out.read_text(encoding="utf-8")
    assert text.count("\n#") > 20  # commented throughout
    # with the config it wrote, a command runs
    status = CliRunner().invoke(cli, ["evaluate", "--config", str(out), "--db", str(tmp_path / "w.duckdb")])
    assert "no config" not in status.output
    refused = CliRunner().invoke(cli, ["init", "--out", str(out)])
    assert refused.exit_code == 1
    assert "--force" in refused.output
    assert CliRunner().invoke(cli, ["init", "--out", str(out), "--force"]).exit_code == 0


def test_starter_quotes_odd_names_and_guesses_scenarios_from_partition_names(tmp_path: Path) -> None:
    pool = StarterPool(cluster='c "1"', accounts={"ml research": "ML \u7814\u7a76", "b": ""},
                       partitions=(StarterPartition("gpu-train", 16), StarterPartition("misc")), gpus=16)
    path = tmp_path / "c.toml"
    path.write_text(render_starter(pool), encoding="utf-8")
    config = load_config(path)
    assert config.teams["ml research"].display_name == "ML \u7814\u7a76"
    assert [(r.match.partition, r.scenario) for r in config.rules] == [
        ("gpu-train", "training"), ("misc", "general_compute"), (None, "general_compute")]
    assert guess_scenario("vllm-serving") == "online_inference"
    assert guess_scenario("a100") == "general_compute"
