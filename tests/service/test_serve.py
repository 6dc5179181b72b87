"""The service over a simulated day: rows, evaluation, alerts, /metrics, and a reader that never hits a lock."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.service.serve_helpers import ServedDay
from warehouse.readmodel import load_read_model

pytestmark = pytest.mark.slow  # minutes: scheduled first (tests/parallel.py)


def test_the_day_was_imported_and_evaluated(served: ServedDay) -> None:
    assert {"dcgm/east/2026-10-02.om.gz", "slurm/west/sacct-2026-10.json.gz"} <= set(served.feeder.copied)
    model = load_read_model(served.root / "readmodel")
    assert [str(m) for m in model.months()] == ["2026-10"]
    tables = model.status()["tables"]
    assert tables["gpu_minutes"]["rows"] > 0
    assert tables["gpu_minutes"]["max_ts"].startswith("2026-10-02T23:59")
    assert model.month_outputs(model.months()[0]).results.height > 0


def test_the_planted_reserve_breach_alerts(served: ServedDay) -> None:
    alerts = load_read_model(served.root / "readmodel").alerts()
    assert "inference_reserve" in set(alerts["line"].to_list())
    delivered = (served.root / "alerts.jsonl").read_text(encoding="utf-8")
    assert "InferenceReserveBreach" in delivered


def test_the_dashboard_read_while_the_service_wrote(served: ServedDay) -> None:
    assert served.read_errors == []
    assert len(served.reads) >= 2  # it saw the model change under it


def test_metrics_report_health_and_results(served: ServedDay) -> None:
    status, body = served.get("/metrics")
    assert status == 200
    rows = re.search(r'^gpusteward_rows_ingested_total\{table="gpu_minutes"\} (\S+)$', body, re.M)
    assert rows
    assert float(rows.group(1)) > 0
    assert 'gpusteward_collection_up{source="import:incoming"} 1.0' in body
    assert 'gpusteward_job_up{job="evaluate"} 1.0' in body
    assert re.search(r'^gpusteward_sla_compliance\{.*scenario="online_inference".*\} [01]\.0$', body, re.M)
    assert re.search(r'^gpusteward_protection_line_breached\{.*line="inference_reserve".*\} [01]\.0$', body, re.M)
    assert re.search(r'^gpusteward_idle_gpu_hours\{.*kind="idle_held".*\} ', body, re.M)
    assert 'gpusteward_job_duration_seconds_count{job="evaluate"}' in body


def test_health_and_readiness(served: ServedDay) -> None:
    assert served.get("/healthz") == (200, "ok\n")
    assert served.get("/readyz") == (200, "ready\n")
    assert served.get("/nope")[0] == 404


def test_versions_are_pruned(served: ServedDay) -> None:
    versions = [p for p in (served.root / "readmodel").iterdir() if p.name.startswith("v")]
    assert 1 <= len(versions) <= 3
    assert not list((served.root / "readmodel").glob(".tmp-*"))


def test_the_warehouse_stays_with_the_service(served: ServedDay) -> None:
    # Nothing but the service opened the DuckDB file: the dashboards read Parquet.
    assert Path(served.service.settings.read_model).is_dir()
    assert served.thread.is_alive()
