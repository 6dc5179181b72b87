"""`gpusteward dashboard` over the service's read model (beside a running service, as in the Kubernetes
pod) or over the warehouse file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from service.cli import cli


@pytest.fixture
def calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    seen: list[dict[str, Any]] = []

    def fake(db_path: str, config_path: str, **kwargs: Any) -> None:
        seen.append({"db": db_path, "config": config_path, **kwargs})

    monkeypatch.setattr("service.dashboard.serve_dashboard", fake)
    return seen


def test_the_read_model_and_the_api_reach_the_dashboard(calls: list[dict[str, Any]], tmp_path: Path) -> None:
    config = tmp_path / "gpusteward.toml"
    config.write_text('apiVersion = "gpusteward/v1"\n')
    args = ["dashboard", "--config", str(config), "--read-model", str(tmp_path / "rm"),
            "--api", "http://127.0.0.1:9464", "--port", "8600"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert calls == [{"db": str(tmp_path / "gpusteward.duckdb"), "config": str(config), "port": 8600,
                      "read_model": str(tmp_path / "rm"), "api_url": "http://127.0.0.1:9464"}]


def test_the_api_without_a_read_model_is_refused(calls: list[dict[str, Any]], tmp_path: Path) -> None:
    config = tmp_path / "gpusteward.toml"
    config.write_text('apiVersion = "gpusteward/v1"\n')
    result = CliRunner().invoke(cli, ["dashboard", "--config", str(config), "--api", "http://127.0.0.1:9464"])
    assert result.exit_code == 2
    assert "--api needs --read-model" in result.output
    assert calls == []
