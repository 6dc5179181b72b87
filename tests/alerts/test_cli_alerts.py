"""`gpusteward alerts list|silence|test|send` (the group in service/cli_alerts.py) and its glue."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpusteward.config import load_config
from service.alerting import run_alert_tick
from service.cli_alerts import alerts
from tests.alerts.outage import T0, observed
from tests.alerts.server import Recorder, recording_server
from warehouse import open_warehouse


def _config(tmp_path: Path, hook: Recorder) -> Path:
    path = tmp_path / "gpusteward.toml"
    path.write_text(
        f"""
[warehouse]
path = "w.duckdb"

[[clusters]]
name = "east"
gpus = 32

[[alerts.receivers]]
name = "ops"
kind = "webhook"
url = "{hook.url}"
secret_env = "GPUSTEWARD_TEST_SECRET"
""",
        encoding="utf-8",
    )
    return path


def test_alerts_test_sends_firing_and_resolved_to_each_receiver(tmp_path: Path) -> None:
    with recording_server() as hook:
        cfg = _config(tmp_path, hook)
        result = CliRunner(env={"GPUSTEWARD_TEST_SECRET": "s"}).invoke(alerts, ["test", "--config", str(cfg)])
        assert result.exit_code == 0, result.output
        assert result.output.splitlines() == ["ops: firing ok", "ops: resolved ok"]
        statuses = [json.loads(b)["alerts"][0]["status"] for b in hook.bodies]
        assert statuses == ["firing", "resolved"]
        assert all("x-gpusteward-signature" in r.headers for r in hook.requests)
        failing = CliRunner(env={}).invoke(alerts, ["test", "--config", str(cfg)])
        assert failing.exit_code == 1
        assert "GPUSTEWARD_TEST_SECRET" in failing.output


def test_silence_add_list_expire(tmp_path: Path) -> None:
    with recording_server() as hook:
        cfg = str(_config(tmp_path, hook))
    runner = CliRunner()
    added = runner.invoke(alerts, ["silence", "--config", cfg, "--match", 'cluster="east"', "--for", "2h",
                                   "--comment", "drain", "--by", "ops"])
    assert added.exit_code == 0, added.output
    silence_id = added.output.split()[1]
    listed = runner.invoke(alerts, ["silence", "--config", cfg, "--list"])
    assert f"{silence_id}  active" in listed.output
    assert 'cluster="east"' in listed.output
    bad = runner.invoke(alerts, ["silence", "--config", cfg, "--match", "cluster"])
    assert bad.exit_code == 2
    expired = runner.invoke(alerts, ["silence", "--config", cfg, "--expire", silence_id])
    assert expired.exit_code == 0, expired.output
    assert f"{silence_id}  expired" in runner.invoke(alerts, ["silence", "--config", cfg]).output


def test_tick_through_the_warehouse_honours_stored_silences_and_lists(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GPUSTEWARD_TEST_SECRET", "s")
    with recording_server() as hook:
        cfg_path = _config(tmp_path, hook)
        config = load_config(cfg_path)
        runner = CliRunner()
        # Silence west; east and south go out.
        silenced = runner.invoke(alerts, ["silence", "--config", str(cfg_path), "--match", "cluster=west",
                                          "--start", f"{T0:%Y-%m-%d %H:%M}", "--for", "2h"])
        assert silenced.exit_code == 0, silenced.output
        now = T0 + timedelta(minutes=45)
        with open_warehouse(tmp_path / "w.duckdb") as wh:
            result = run_alert_tick(wh, config, observed(40), now)
        sent = {a["labels"]["cluster"] for b in hook.bodies for a in json.loads(b)["alerts"]}
        assert sent == {"east", "south"}
        assert result.delivery.delivered == 2
        listed = runner.invoke(alerts, ["list", "--config", str(cfg_path), "--outbox"])
        assert listed.exit_code == 0, listed.output
        assert "engine (live): 2 pending or firing" in listed.output
        assert "muted by silence:" in listed.output
        assert "outbox: 2 delivered" in listed.output
