"""The read model: published atomically, read without DuckDB, pruned, carrying control decisions."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from gpusteward.domain import Month
from sla.outputs import MonthOutputs
from tests.reports.fixtures import MONTH, demo_outputs
from warehouse import Warehouse, control
from warehouse.readmodel import KEEP, NoReadModelError, current_version, load_read_model, publish, snapshot

T = datetime(2026, 12, 1, 1, 0)


def _store(wh: Warehouse) -> MonthOutputs:
    outputs = demo_outputs()
    wh.store_month_outputs(outputs)
    wh.store_plan("2026-11-p1", MONTH, T, "proposed", dry_run=True, body={"items": []}, items=outputs.plan_items)
    wh.record_alerts(MONTH, [{"fingerprint": "ab" * 8, "status": "firing", "line": "inference_reserve",
                              "subject": "east", "severity": "critical", "starts_at": T, "summary": "s"}])
    return outputs


def test_round_trip(wh: Warehouse, tmp_path: Path) -> None:
    outputs = _store(wh)
    version = publish(snapshot(wh, now=T), tmp_path / "rm")
    model = load_read_model(tmp_path / "rm")
    assert model.version == version == current_version(tmp_path / "rm")
    assert model.months() == [MONTH]
    got = model.month_outputs(MONTH)
    assert got.results.drop("month").equals(outputs.results.drop("month"))
    assert got.episodes.equals(outputs.episodes)
    assert model.alerts(MONTH)["fingerprint"].to_list() == ["ab" * 8]
    assert model.plans(MONTH)["plan_id"].to_list() == ["2026-11-p1"]
    assert model.status()["tables"]["sla_results"]["rows"] == outputs.results.height
    assert model.month_outputs(Month(2026, 1)).results.is_empty()
    assert (tmp_path / "rm" / version / "sla_results" / "month=2026-11" / "part-0.parquet").exists()


def test_decisions_and_silences_come_from_the_audit_trail(wh: Warehouse, tmp_path: Path) -> None:
    _store(wh)
    control.record(wh, "alice", "plan.approve", "2026-11-p1", at=T, reason="ok")
    control.record(wh, "bob", "alert.silence", "ab" * 8, at=T, until=T + timedelta(hours=2))
    with pytest.raises(control.ControlError) as conflict:
        control.record(wh, "bob", "plan.reject", "2026-11-p1", at=T)
    assert conflict.value.status == 409
    with pytest.raises(control.ControlError) as unknown:
        control.record(wh, "bob", "plan.approve", "nope", at=T)
    assert unknown.value.status == 404
    publish(snapshot(wh, now=T), tmp_path / "rm")
    model = load_read_model(tmp_path / "rm")
    plan = model.plans().row(0, named=True)
    assert (plan["decision"], plan["decided_by"]) == ("approved", "alice")
    state = model.alert_states().row(0, named=True)
    assert (state["silenced_by"], state["silenced_until"]) == ("bob", T + timedelta(hours=2))
    assert sorted(model.control_actions()["actor"].to_list()) == ["alice", "bob"]


def test_old_versions_are_pruned_and_current_is_always_complete(wh: Warehouse, tmp_path: Path) -> None:
    _store(wh)
    names = [publish(snapshot(wh, now=T + timedelta(minutes=i)), tmp_path / "rm") for i in range(KEEP + 2)]
    kept = sorted(p.name for p in (tmp_path / "rm").iterdir() if p.name.startswith("v"))
    assert kept == names[-KEEP:]
    assert current_version(tmp_path / "rm") == names[-1]


def test_a_failed_publication_leaves_the_previous_version(wh: Warehouse, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _store(wh)
    first = publish(snapshot(wh, now=T), tmp_path / "rm")

    def broken(*_args: object, **_kwargs: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(pl.DataFrame, "write_parquet", broken)
    with pytest.raises(OSError, match="disk full"):
        publish(snapshot(wh, now=T + timedelta(minutes=5)), tmp_path / "rm")
    assert current_version(tmp_path / "rm") == first
    assert not list((tmp_path / "rm").glob(".tmp-*"))
    assert load_read_model(tmp_path / "rm").version == first


def test_nothing_published_yet_says_so(tmp_path: Path) -> None:
    with pytest.raises(NoReadModelError, match="no read model published yet"):
        load_read_model(tmp_path / "empty")
