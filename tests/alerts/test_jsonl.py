"""The JSONL notifier appends each (fingerprint, status) once."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from alerts.jsonl import JsonlNotifier
from alerts.model import alerts_from_episodes
from gpusteward.errors import PermanentError
from tests.alerts.helpers import END, config, episodes


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def test_appends_once_then_resolved(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "alerts.jsonl"
    notifier = JsonlNotifier("ops", path)
    firing = alerts_from_episodes(episodes({}), config(), data_end=END)
    assert notifier.send(firing) == 1
    assert notifier.send(firing) == 0  # the same run again changes nothing
    resolved = alerts_from_episodes(episodes({}), config(), data_end=datetime(2026, 3, 31))
    assert notifier.send(resolved) == 1
    lines = _lines(path)
    assert [(r["status"], r["receiver"]) for r in lines] == [("firing", "ops"), ("resolved", "ops")]
    assert lines[0]["fingerprint"] == lines[1]["fingerprint"]
    assert lines[0]["labels"]["alertname"] == "InferenceReserveBreach"


def test_torn_last_line_does_not_stop_delivery(tmp_path: Path) -> None:
    path = tmp_path / "alerts.jsonl"
    path.write_text('{"fingerprint": "x", "status": "firing"}\n{"fingerp', encoding="utf-8")
    alerts = alerts_from_episodes(episodes({}), config())
    assert JsonlNotifier("ops", path).send(alerts) == 1
    lines = path.read_text(encoding="utf-8").splitlines()
    assert lines[1] == '{"fingerp'
    assert json.loads(lines[2])["status"] == "resolved"


def test_unwritable_path_is_permanent(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("", encoding="utf-8")
    with pytest.raises(PermanentError, match="cannot write"):
        JsonlNotifier("ops", blocker / "alerts.jsonl").send(alerts_from_episodes(episodes({}), config()))
