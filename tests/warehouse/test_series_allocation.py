"""GPUs allocated and their utilisation per cluster and local hour, computed in DuckDB from the packed
GPU-minutes, checked against a hand count and, drawn at random, against a recount in plain Python
(zoneinfo for the hours) and the evaluation's own minute digest (sla.minute_digest)."""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusteward import tables
from gpusteward.config.schema import Config, IdleConfig, RuleConfig, RuleMatch
from gpusteward.domain import Month, Scenario
from sla.common import Window
from sla.minute_digest import digest_minutes
from warehouse import Warehouse
from warehouse.series_allocation import allocation_hourly

CONFIG = Config(rules=[
    RuleConfig(scenario=Scenario.ONLINE_INFERENCE, match=RuleMatch(partition="serve")),
    RuleConfig(scenario=Scenario.TRAINING, match=RuleMatch(partition="train")),
])


Minute = tuple[str, str, int, datetime, str | None, float | None, float | None]


def _minutes(rows: list[Minute]) -> pl.DataFrame:
    """(cluster, host, gpu, ts, job id, gr_engine_active, gpu_util) -> GPU_MINUTES rows."""
    return tables.conform(pl.DataFrame(
        [{"cluster": c, "host": h, "gpu": g, "ts": ts, "job_id": j, "gr_engine_active": e, "gpu_util": u}
         for c, h, g, ts, j, e, u in rows],
        schema_overrides={"ts": pl.Datetime("us"), "gr_engine_active": pl.Float32, "gpu_util": pl.Float32},
        orient="row",
    ), tables.GPU_MINUTES)


def _jobs(rows: list[tuple[str, int, str, datetime]]) -> pl.DataFrame:
    """(cluster, job id, partition, submit) -> JOBS rows running for two days."""
    return tables.conform(pl.DataFrame([
        {"cluster": c, "job_id": j, "partition": p, "submit_time": s, "start_time": s,
         "end_time": s + timedelta(days=2), "state": "COMPLETED", "gpus_allocated": 1}
        for c, j, p, s in rows
    ]), tables.JOBS)


def _every(start: datetime, n: int) -> list[datetime]:
    return [start + timedelta(minutes=i) for i in range(n)]


def test_hours_are_the_pools_and_hours_without_telemetry_have_no_row(wh: Warehouse) -> None:
    month = Month(2026, 11, "Asia/Kolkata")  # UTC+5:30: the month, and every hour, begins at :30 UTC
    start = datetime(2026, 10, 31, 18, 30)
    rows: list[Minute] = [("east", "a", 0, t, "7", 0.5, 90.0) for t in _every(start, 20)]  # training, engine 0.5
    rows += [("east", "a", 1, t, None, None, 40.0) for t in _every(start - timedelta(minutes=5), 10)]  # 5 in October
    rows += [("east", "a", 0, t, "8", None, 20.0) for t in _every(start + timedelta(hours=1), 10)]  # inference
    # 20:30-21:30 UTC: nothing reported anywhere (no row: no data, not 0)
    rows += [("west", "b", 0, start + timedelta(hours=3, minutes=5), "9", None, math.nan)]  # no utilisation
    wh.ingest("test", {"gpu_minutes": _minutes(rows), "jobs": _jobs([
        ("east", 7, "train", start), ("east", 8, "serve", start), ("west", 9, "train", start)])})
    got = allocation_hourly(wh, month, CONFIG)
    assert got.select("hour", "zone", "cluster").rows() == [
        (datetime(2026, 10, 31, 18, 30), "Asia/Kolkata", "east"),
        (datetime(2026, 10, 31, 19, 30), "Asia/Kolkata", "east"),
        (datetime(2026, 10, 31, 21, 30), "Asia/Kolkata", "west"),
    ]
    first, second, third = got.to_dicts()
    assert (first["reporting_gpus"], first["allocated_gpus"], first["inference_gpus"]) == (25 / 60, 20 / 60, 0.0)
    assert (first["util_minutes"], first["engine_minutes"], first["util_mean"]) == (20, 20, 0.5)
    assert (second["reporting_gpus"], second["allocated_gpus"], second["inference_gpus"]) == (10 / 60, 10 / 60, 10 / 60)
    assert (second["util_minutes"], second["engine_minutes"]) == (10, 0)
    assert second["util_mean"] == pytest.approx(0.2)  # GPU_UTIL / 100 where no engine activity was exported
    assert (third["allocated_gpus"], third["util_minutes"], third["util_mean"]) == (1 / 60, 0, None)


def _local_hour(ts: datetime, zone: str) -> datetime:
    """Independent of the product: the local hour's start by zoneinfo, back in naive UTC."""
    local = ts.replace(tzinfo=UTC).astimezone(ZoneInfo(zone))
    return ts - timedelta(minutes=local.minute)  # in UTC: aware arithmetic would lose a repeated hour's fold


_ZONES = {  # zone -> where its November begins (UTC): New York's month begins the day its clocks fall back
    "America/New_York": datetime(2026, 11, 1, 4), "Asia/Kolkata": datetime(2026, 10, 31, 18, 30),
    "UTC": datetime(2026, 11, 1),
}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.sampled_from(sorted(_ZONES)), st.dictionaries(
    st.tuples(st.integers(0, 2), st.integers(-40, 5 * 60)),  # (GPU, minute from the month's start)
    # (job: 1 is inference, 2 training; engine activity as stored, to 1e-4; GPU_UTIL, perhaps NaN)
    st.tuples(st.sampled_from([None, "1", "2"]), st.one_of(st.none(), st.integers(0, 10_000).map(lambda e: e / 1e4)),
              st.one_of(st.none(), st.just(math.nan), st.floats(0, 100, width=32))),
    min_size=1, max_size=60,
))
def test_matches_a_recount_and_the_evaluations_digest(
    wh: Warehouse, zone: str, draws: dict[tuple[int, int], tuple[str | None, float | None, float | None]]
) -> None:
    start = _ZONES[zone]
    month = Month(2026, 11, zone)
    wh.connection.execute("DELETE FROM gpu_minute_rows")
    wh.connection.execute("DELETE FROM jobs")
    rows: list[Minute] = [("east", "h", g, start + timedelta(minutes=m), j, e, u)
                          for (g, m), (j, e, u) in sorted(draws.items())]
    frame = _minutes(rows)
    jobs = _jobs([("east", 1, "serve", start), ("east", 2, "train", start)])
    wh.ingest("drawn", {"gpu_minutes": frame, "jobs": jobs})
    got = allocation_hourly(wh, month, CONFIG)

    expected: dict[datetime, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for _c, _h, _g, ts, job, engine, util in rows:
        if not start <= ts < month.end.replace(tzinfo=None):
            continue
        hour = expected[_local_hour(ts, zone)]
        hour["reporting"] += 1
        hour["allocated"] += job is not None
        hour["inference"] += job == "1"
        value = engine if engine is not None else (util / 100 if util is not None else None)
        if job is not None and value is not None and not math.isnan(value):
            hour["util_minutes"] += 1
            hour["engine_minutes"] += engine is not None
            hour["util_sum"] += value
    assert got["hour"].to_list() == sorted(expected)  # an hour with no minute has no row
    for row in got.iter_rows(named=True):
        hour = expected[row["hour"]]
        assert row["reporting_gpus"] * 60 == pytest.approx(hour["reporting"])
        assert row["allocated_gpus"] * 60 == pytest.approx(hour["allocated"])
        assert row["inference_gpus"] * 60 == pytest.approx(hour["inference"])
        assert row["util_minutes"] == hour["util_minutes"]
        assert row["engine_minutes"] == hour["engine_minutes"]
        if hour["util_minutes"]:
            assert row["util_mean"] == pytest.approx(hour["util_sum"] / hour["util_minutes"], abs=1e-6)
        else:
            assert row["util_mean"] is None  # no utilisation value that hour: unknown, never 0

    # The hours add up to what the evaluation's digest counts for the month (sla.daily's utilisation).
    window = Window(month.start.replace(tzinfo=None), month.end.replace(tzinfo=None), zone)
    days = digest_minutes(frame, window, IdleConfig()).job_days
    assert got["util_minutes"].sum() == days["util_minutes"].sum()
    util_sum = (got["util_mean"].fill_null(0) * got["util_minutes"]).sum()
    assert util_sum == pytest.approx(days["util_sum"].sum(), abs=1e-6)
