"""A silence set through the control API (one alert, by fingerprint) mutes that alert's delivery."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path

from alerts.model import alerts_from_episodes
from gpusteward.config import load_config_text
from gpusteward.domain import Month
from service.alerting import run_alert_tick
from service.pipeline import alert_rows
from tests.alerts.helpers import END, START, episodes
from warehouse import open_warehouse
from warehouse.control import record

CONFIG = """
[[clusters]]
name = "east"
gpus = 32

[[protection.inference_reserve]]
cluster = "east"
min_gpus = 12

[[alerts.receivers]]
name = "file"
kind = "jsonl"
path = "alerts.jsonl"
"""


def delivered(path: Path) -> list[str]:
    return [json.loads(line)["status"] for line in path.read_text().splitlines()] if path.exists() else []


def test_an_api_silence_mutes_the_alert_and_expires(tmp_path: Path) -> None:
    (tmp_path / "c.toml").write_text(CONFIG)
    config = load_config_text(CONFIG, base_dir=str(tmp_path))
    # An episode still going on at the end of the data fires (it has no end yet).
    still_on = episodes({"end": END + timedelta(days=1)})
    data_end = END.replace(tzinfo=UTC)
    alerts = alerts_from_episodes(still_on, config, data_end=data_end)
    now = START.replace(tzinfo=UTC) + timedelta(minutes=30)
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        wh.record_alerts(Month(2026, 3), alert_rows(alerts))
        record(wh, "alice", "alert.silence", alerts[0].fingerprint, at=now, until=now + timedelta(hours=2),
               reason="known: training release run")
        run_alert_tick(wh, config, alerts, now)
        assert delivered(tmp_path / "alerts.jsonl") == []
        run_alert_tick(wh, config, alerts, now + timedelta(hours=3))  # the silence has expired
    assert delivered(tmp_path / "alerts.jsonl") == ["firing"]


def test_without_the_silence_it_is_delivered_at_once(tmp_path: Path) -> None:
    config = load_config_text(CONFIG, base_dir=str(tmp_path))
    alerts = alerts_from_episodes(episodes({"end": END + timedelta(days=1)}), config, data_end=END.replace(tzinfo=UTC))
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        run_alert_tick(wh, config, alerts, datetime(2026, 3, 4, 11, 30, tzinfo=UTC))
    assert delivered(tmp_path / "alerts.jsonl") == ["firing"]
