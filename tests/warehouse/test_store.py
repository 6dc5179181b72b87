from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import duckdb
import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusteward import tables
from gpusteward.domain import Month
from sla import results
from sla.outputs import MonthOutputs
from tests.sla.english import english
from tests.warehouse.conftest import T0, gpu_minutes, job, schema_before
from warehouse import Warehouse, open_warehouse
from warehouse.migrate import available


def test_migrations_are_numbered_and_applied_once(db_path: Path) -> None:
    numbers = [n for n, _, _ in available()]
    assert numbers == sorted(set(numbers))
    assert numbers[0] == 1
    with open_warehouse(db_path) as wh:
        assert wh.status()["schema_version"] == numbers[-1]
    with open_warehouse(db_path) as wh:  # reopening applies nothing twice
        assert wh.status()["schema_version"] == numbers[-1]


def test_ingesting_the_same_batch_twice_changes_nothing(wh: Warehouse) -> None:
    frames = {
        "gpu_minutes": gpu_minutes("h1", 2, range(60)),
        "jobs": tables.conform(pl.DataFrame([job(1, T0), job(2, T0)]), tables.JOBS),
    }
    first = wh.ingest("a", frames)
    assert first.stored == {"gpu_minutes": 120, "jobs": 2}
    counts = wh.counts()
    second = wh.ingest("a", frames)
    assert second.stored == {"gpu_minutes": 0, "jobs": 0}
    assert {k: v for k, v in wh.counts().items() if k != "import_runs"} == {
        k: v for k, v in counts.items() if k != "import_runs"
    }


def test_overlapping_batches_store_each_minute_once(wh: Warehouse) -> None:
    wh.ingest("a", {"gpu_minutes": gpu_minutes("h1", 1, range(40))})
    result = wh.ingest("b", {"gpu_minutes": gpu_minutes("h1", 1, range(30, 70))})
    assert result.stored["gpu_minutes"] == 30
    assert wh.count("gpu_minutes") == 70


def test_a_running_job_record_is_updated_when_it_ends(wh: Warehouse) -> None:
    running = tables.conform(pl.DataFrame([job(7, T0, "RUNNING", end_time=None)]), tables.JOBS)
    ended = tables.conform(pl.DataFrame([job(7, T0, "COMPLETED")]), tables.JOBS)
    wh.ingest("a", {"jobs": running})
    assert wh.ingest("b", {"jobs": ended}).stored == {"jobs": 0}
    inputs = wh.evaluation_inputs(Month(2026, 11))
    assert inputs.jobs["state"].to_list() == ["COMPLETED"]


def test_a_failing_batch_leaves_nothing_and_earlier_rows_stay(wh: Warehouse) -> None:
    wh.ingest("good", {"gpu_minutes": gpu_minutes("h1", 1, range(10))})
    bad = {"gpu_minutes": gpu_minutes("h2", 1, range(10)), "nonsense": pl.DataFrame({"x": [1]})}
    with pytest.raises(ValueError, match="unknown table"):
        wh.ingest("bad", bad)
    assert wh.count("gpu_minutes") == 10
    assert wh.count("gpus") == 1


def test_completeness_counts_an_outage_as_missing_not_zero(wh: Warehouse) -> None:
    wh.ingest("a", {"gpu_minutes": gpu_minutes("h1", 2, range(120), skip=range(30, 90))})
    wh.ingest("b", {"gpu_minutes": gpu_minutes("h2", 2, range(120))})
    frame = wh.completeness(Month(2026, 11))
    row = frame.row(0, named=True)
    assert (row["expected"], row["present"], row["missing"]) == (480, 360, 120)
    assert english(row["detail"]) == "h1: 2 GPUs silent from 2026-11-01 00:30 UTC to 2026-11-01 01:30 UTC (1h each)"
    status = wh.status()
    assert status["completeness"][0]["completeness"] == 0.75
    assert status["tables"]["gpu_minutes"]["rows"] == 360


def test_month_outputs_round_trip(wh: Warehouse) -> None:
    month = Month(2026, 11)
    sla = tables.conform(
        pl.DataFrame({"month": ["2026-11"], "scenario": ["training"], "subject": ["east/train"], "value": [1.5]}),
        results.SLA_RESULTS,
    )
    outputs = MonthOutputs(
        month,
        sla,
        tables.empty(results.IDLE_BY_JOB),
        tables.empty(results.BREACH_EPISODES),
        tables.empty(results.USAGE),
        tables.empty(results.COMPLETENESS),
        tables.empty(results.QUOTA_PLAN_ITEMS),
    )
    wh.store_month_outputs(outputs)
    wh.store_month_outputs(outputs)  # replacing a month does not duplicate it
    back = wh.month_outputs(month)
    assert back.results.equals(sla)
    assert wh.months() == [month]


def test_read_only_connection_cannot_reach_files(db_path: Path, tmp_path: Path) -> None:
    with open_warehouse(db_path) as wh:
        wh.ingest("a", {"gpu_minutes": gpu_minutes("h1", 1, range(3))})
    secret = tmp_path / "secret.csv"
    secret.write_text("a\n1\n")
    with open_warehouse(db_path, read_only=True) as wh:
        assert wh.count("gpu_minutes") == 3
        with pytest.raises(duckdb.Error):
            wh._con.sql(f"SELECT * FROM read_csv('{secret}')").fetchall()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.integers(0, 3), st.integers(0, 50), st.integers(1, 30)), min_size=1, max_size=6))
def test_any_sequence_of_overlapping_imports_stores_each_sample_once(
    tmp_path_factory: pytest.TempPathFactory, batches: list[tuple[int, int, int]]
) -> None:
    path = tmp_path_factory.mktemp("prop") / "w.duckdb"
    expected: set[tuple[str, int, object]] = set()
    with open_warehouse(path) as wh:
        for host, start, length in batches:
            frame = gpu_minutes(f"h{host}", 1, range(start, start + length))
            wh.ingest("x", {"gpu_minutes": frame})
            wh.ingest("x", {"gpu_minutes": frame})
            expected |= {(f"h{host}", 0, T0 + timedelta(minutes=m)) for m in range(start, start + length)}
        assert wh.count("gpu_minutes") == len(expected)


def test_daily_usage_and_failures_round_trip(wh: Warehouse) -> None:
    from datetime import date

    month = Month(2026, 11)
    daily = tables.conform(
        pl.DataFrame({"day": [date(2026, 11, 2)], "scenario": ["training"], "team": ["nlp"], "gpu_hours": [12.5],
                      "util_minutes": [600], "util_mean": [0.4]}),
        results.DAILY_USAGE,
    )
    failures = tables.conform(
        pl.DataFrame({"scenario": ["evaluation"], "team": ["nlp"], "queue": ["west/eval"], "name": ["sweep"],
                      "state": ["FAILED"], "records": [3]}),
        results.FAILURES,
    )
    empty = {name: tables.empty(schema) for name, schema in (
        ("idle", results.IDLE_BY_JOB), ("episodes", results.BREACH_EPISODES), ("usage", results.USAGE),
        ("completeness", results.COMPLETENESS), ("plan_items", results.QUOTA_PLAN_ITEMS))}
    outputs = MonthOutputs(month, tables.empty(results.SLA_RESULTS), daily_usage=daily, failures=failures, **empty)
    wh.store_month_outputs(outputs)
    back = wh.month_outputs(month)
    assert back.daily_usage.equals(daily)
    assert back.failures.equals(failures)


def test_long_queries_draw_no_progress_bar_on_the_log(db_path: Path) -> None:
    for read_only in (False, True):
        with open_warehouse(db_path, read_only=read_only) as wh:
            assert wh.query("SELECT current_setting('enable_progress_bar') AS on").item() is False


def test_a_read_only_open_of_an_older_schema_says_to_migrate(db_path: Path) -> None:
    with open_warehouse(db_path):
        pass
    con = duckdb.connect(str(db_path))
    con.execute("DELETE FROM schema_migrations WHERE number = (SELECT max(number) FROM schema_migrations)")
    con.close()
    with pytest.raises(RuntimeError, match="open it once for writing to migrate"):
        open_warehouse(db_path, read_only=True).__enter__()


def test_alerts_recorded_without_their_subject_get_it_from_their_labels(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with schema_before(tmp_path / "old.duckdb", monkeypatch, 33) as (con, upgrade):
        rows = [("q", "queue_wait", None, '{"labels": {"line": "queue_wait", "queue": "west/eval"}}'),
                ("t", "interactive_limits", None, '{"labels": {"line": "interactive_limits", "team": "research"}}'),
                ("s", "burn_rate", None, '{"labels": {"line": "burn_rate", "service": "chat-70b"}}'),
                ("c", "inference_reserve", "east", '{"labels": {"line": "inference_reserve", "cluster": "east"}}'),
                ("x", "queue_wait", None, "{}")]  # no label to take it from: stays unknown
        for fp, line, subject, body in rows:
            con.execute("INSERT INTO alerts (fingerprint, status, line, subject, body, recorded_at)"
                        " VALUES (?, 'resolved', ?, ?, ?, TIMESTAMP '2026-10-01')", [fp, line, subject, body])
        assert upgrade()[0] == "033_alert_subjects.sql"
        got = dict(con.sql("SELECT fingerprint, subject FROM alerts").fetchall())
    assert got == {"q": "west/eval", "t": "research", "s": "chat-70b", "c": "east", "x": None}
