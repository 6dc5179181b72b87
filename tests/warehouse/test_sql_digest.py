"""The minute digest as SQL (warehouse/digest) equals the Python digest (sla.minute_digest), row for row:
on random minute series with gaps, host silences, idle runs across local midnights and job changes,
on the warehouse read a few hosts at a time, and on hand-made cases with known answers."""

from __future__ import annotations

from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusteward.config.schema import IdleConfig
from gpusteward.domain import Month
from gpusteward.tables import GPU_MINUTES
from sla.common import Window, window_of
from sla.idle import idle_by_job
from sla.minute_digest import digest_minutes
from tests.sla.builders import config, frame, inputs, job
from tests.sla.test_minute_digest import assert_same_digest
from tests.warehouse.conftest import T0, gpu_minutes
from warehouse import Warehouse
from warehouse.digest.dialect import DUCKDB, SPARK, expand
from warehouse.digest.duckdb_digest import frame_digest
from warehouse.digest.statements import Relations, statements

HOSTS = [("east", "h1"), ("east", "h2"), ("west", "h1")]
# Zones whose midnights fall on whole hours, half hours and (Lord Howe's DST) half-hour shifts;
# New York leaves daylight time on 2026-11-01, inside the series drawn around it.
ZONES = ["UTC", "Asia/Kolkata", "America/New_York", "Australia/Lord_Howe"]
DAY = date(2026, 11, 1)
MIG = [(None, None), (None, None), ("1g.10gb", "NVIDIA H100 80GB HBM3"), ("3g.40gb", "NVIDIA H100 80GB HBM3"),
       ("1g.6gb", "NVIDIA A30")]


def _midnight_utc(tz: str) -> datetime:
    local = datetime(DAY.year, DAY.month, DAY.day, tzinfo=ZoneInfo(tz))
    return local.astimezone(ZoneInfo("UTC")).replace(tzinfo=None)


@st.composite
def months(draw: st.DrawFn) -> tuple[pl.DataFrame, Window, IdleConfig]:
    """Minutes of a few hosts around a local midnight: runs of one job and utilisation level, missing
    minutes per GPU and per host (silences), both utilisation sources, nulls and NaN."""
    tz = draw(st.sampled_from(ZONES))
    start = _midnight_utc(tz) - timedelta(minutes=draw(st.integers(0, 90)))
    rows: list[dict[str, Any]] = []
    for cluster, host in HOSTS:
        silent = set(range(draw(st.integers(0, 150)), 150)[: draw(st.integers(0, 20))])
        for gpu in range(draw(st.integers(0, 2))):
            engine = draw(st.booleans())
            # a whole GPU, or a MIG instance counted by its share (1/7, 3/7 of an H100; 1/4 of an A30)
            profile, model = draw(st.sampled_from(MIG))
            m = draw(st.integers(0, 10))
            while m < 150:
                length = draw(st.integers(1, 25))
                job_id = draw(st.sampled_from([None, "1", "2", "3"]))
                level = draw(st.sampled_from([0.0, 2.0, 4.9, 5.0, 60.0, None, float("nan")]))
                held = draw(st.sampled_from([None, 0.0, 2048.0]))
                missing = draw(st.sets(st.integers(0, 24), max_size=2))
                for minute in range(m, min(m + length, 150)):
                    if minute in silent or minute - m in missing:
                        continue
                    rows.append({
                        "cluster": cluster, "host": host, "gpu": gpu, "ts": start + timedelta(minutes=minute),
                        "job_id": job_id,
                        "gpu_util": None if engine else level,
                        "gr_engine_active": None if (not engine or level is None) else level / 100.0,
                        "fb_used_mib": held, "mig_profile": profile, "model_name": model,
                    })
                m += length + draw(st.sampled_from([0, 0, 0, 1, 7]))
    lo, hi = draw(st.integers(0, 20)), draw(st.integers(100, 160))
    window = Window(start + timedelta(minutes=lo), start + timedelta(minutes=hi), tz)
    idle = IdleConfig(
        util_below=draw(st.sampled_from([5.0, 50.0])),
        min_minutes=draw(st.integers(1, 6)),
        held_memory_mib=1024.0,
    )
    return frame(rows, GPU_MINUTES), window, idle


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(month=months())
def test_the_sql_digest_is_the_python_digest(month: tuple[pl.DataFrame, Window, IdleConfig]) -> None:
    minutes, window, idle = month
    assert_same_digest(frame_digest(minutes, window, idle), digest_minutes(minutes, window, idle))


def _row(minute: int, util: float | None, *, job_id: str | None = "7", gpu: int = 0, host: str = "h1",
         fb: float | None = None) -> dict[str, Any]:
    return {"cluster": "east", "host": host, "gpu": gpu, "ts": START + timedelta(minutes=minute), "job_id": job_id,
            "gpu_util": util, "fb_used_mib": fb}


START = datetime(2026, 10, 31, 18, 0)  # 23:30 in Kolkata: its midnight is at minute 30
KOLKATA = Window(START, START + timedelta(hours=2), "Asia/Kolkata")


def test_an_idle_run_across_midnight_counts_on_both_days() -> None:
    idle = IdleConfig(util_below=5.0, min_minutes=10, held_memory_mib=1024.0)
    rows = [_row(m, 90.0) for m in range(20)]
    rows += [_row(m, 1.0, fb=4096.0 if m < 25 else 0.0) for m in range(20, 45)]  # idle 20..44, held until 24
    rows += [_row(m, 1.0, job_id="8") for m in range(45, 50)]  # another job: too short to be idle
    rows += [_row(m, None, job_id=None) for m in range(50, 52)]  # rows without a value
    rows += [_row(m, 0.0, job_id=None) for m in range(52, 55)]  # unallocated
    rows += [_row(m, 0.0, job_id=None, host="h2") for m in (0, 1, 2, 70)]  # a second host, silent for 67 minutes
    digest = frame_digest(frame(rows, GPU_MINUTES), KOLKATA, idle)
    days = {(r["job_id"], r["day"]): r for r in digest.job_days.iter_rows(named=True)}
    before, after = days[("7", date(2026, 10, 31))], days[("7", date(2026, 11, 1))]
    assert (before["busy_minutes"], before["idle_minutes"], before["idle_held_minutes"]) == (20, 5, 5)
    assert (after["busy_minutes"], after["idle_minutes"], after["idle_held_minutes"]) == (0, 15, 0)
    assert (after["util_minutes"], after["util_sum"]) == (15, pytest.approx(15 * 0.01))
    assert days[("8", date(2026, 11, 1))]["busy_minutes"] == 5
    runs = digest.idle_runs.filter(pl.col("host") == "h1").rows(named=True)
    assert [(r["job_id"], r["start"], r["minutes"], r["held"]) for r in runs] == [
        ("7", START + timedelta(minutes=20), 25, True)
    ]
    gpu = digest.gpus.filter(pl.col("host") == "h1").row(0, named=True)
    assert (gpu["rows"], gpu["unallocated_minutes"], gpu["last_ts"]) == (55, 3, START + timedelta(minutes=54))
    silence = digest.host_silences.row(0, named=True)
    assert (silence["host"], silence["gap_minutes"], silence["gap_end"]) == ("h2", 67, START + timedelta(minutes=70))
    assert_same_digest(digest, digest_minutes(frame(rows, GPU_MINUTES), KOLKATA, idle))


def test_a_repeated_gpu_minute_is_refused_with_where_it_is() -> None:
    rows = [_row(0, 1.0), _row(0, 2.0)]
    with pytest.raises(ValueError, match=r"east/h1/0 at 2026-10-31 18:00"):
        frame_digest(frame(rows, GPU_MINUTES), KOLKATA, IdleConfig())


def test_the_dialects_spell_only_what_differs() -> None:
    relations = Relations(minutes="m", gpus="g", jobs="j")
    duck = statements(DUCKDB, relations, KOLKATA, IdleConfig())
    spark = statements(SPARK, relations, KOLKATA, IdleConfig())
    assert [s.name for s in duck] == [s.name for s in spark]
    differing = [d.name for d, s in zip(duck, spark, strict=True) if d.sql != s.sql]
    assert differing == ["dg_rows", "job_days"]  # integer division; the local date
    assert "@" not in "".join(s.sql for s in duck + spark)
    with pytest.raises(ValueError, match="unknown time zone"):
        statements(DUCKDB, relations, Window(START, START, "Mars/Olympus"), IdleConfig())
    with pytest.raises(ValueError, match="unknown dialect function @epoch"):
        expand("SELECT @epoch(ts)", DUCKDB, "UTC")


def _fleet(wh: Warehouse) -> None:
    """Four hosts with a gap at minutes 20-22; job 42 until minute 30, idle (1%) from minute 5 to 15."""
    for host, gpus, minutes in [("a", 2, range(50)), ("b", 4, range(10, 40)), ("c", 1, range(60)), ("d", 3, range(5))]:
        rows = gpu_minutes(host, gpus, minutes, skip=range(20, 23)).with_columns(
            pl.when(pl.col("ts") < T0 + timedelta(minutes=30)).then(pl.lit("42")).alias("job_id"),
            pl.when(pl.col("ts").is_between(T0 + timedelta(minutes=5), T0 + timedelta(minutes=15)))
            .then(pl.lit(1.0)).otherwise(pl.col("gpu_util")).alias("gpu_util"),
        )
        wh.ingest(host, {"gpu_minutes": rows})
    # a MIG host: instances 1 and 2 of device 0 (1g.10gb, 3g.40gb), counted by their share of the card
    mig = gpu_minutes("m", 1, range(40)).with_columns(pl.lit("42").alias("job_id"))
    instances = [mig.with_columns(pl.lit(1000 + i, pl.Int16).alias("gpu"), pl.lit(profile).alias("mig_profile"),
                                  pl.lit("NVIDIA H100 80GB HBM3").alias("model_name"), pl.lit(f"MIG-{i}").alias("uuid"))
                 for i, profile in ((1, "1g.10gb"), (2, "3g.40gb"))]
    wh.ingest("m", {"gpu_minutes": pl.concat(instances)})


@pytest.mark.parametrize("chunk_rows", [40, 10**9])
def test_the_warehouse_digest_in_sql_is_the_python_one(wh: Warehouse, chunk_rows: int) -> None:
    _fleet(wh)
    month = Month(2026, 11)
    idle = IdleConfig(util_below=50.0, min_minutes=2)
    sql = wh.evaluation_inputs(month, idle=idle, chunk_rows=chunk_rows, engine="duckdb").minute_digest
    python = wh.evaluation_inputs(month, idle=idle, chunk_rows=chunk_rows, engine="python").minute_digest
    assert sql is not None
    assert python is not None
    assert sql.gpus["rows"].sum() == wh.count("gpu_minutes") > 0
    assert sql.idle_runs.height > 0
    assert sql.gaps.height > 0
    assert_same_digest(sql, python)
    shares = set(sql.job_days["gpu_minutes"].to_list())
    assert any(m != int(m) for m in shares)  # the MIG host's minutes count by their share
    whole = wh.evaluation_inputs(month)  # the month's rows read at once, digested in Python
    assert_same_digest(sql, digest_minutes(whole.gpu_minutes, window_of(whole), idle))
    with pytest.raises(ValueError, match="unknown digest engine"):
        wh.evaluation_inputs(month, idle=idle, engine="spark")  # type: ignore[arg-type]


def test_a_mig_instance_idle_for_an_hour_is_a_seventh_of_an_idle_gpu_hour() -> None:
    """Idle runs are the instance's own (60 minutes), its idle-held GPU-minutes its share of them (60/7);
    a whole GPU beside it counts whole. Both digests agree, and idle_by_job rounds per job."""
    idle = IdleConfig(util_below=5.0, min_minutes=10, held_memory_mib=1024.0)
    mig = {"mig_profile": "1g.10gb", "model_name": "NVIDIA H100 80GB HBM3"}
    rows = [_row(m, 0.0, gpu=1007, fb=4096.0) | mig for m in range(30, 90)]  # after Kolkata's midnight
    rows += [_row(m, 0.0, job_id="8", gpu=0, fb=4096.0) for m in range(30, 90)]
    minutes = frame(rows, GPU_MINUTES)
    digest = frame_digest(minutes, KOLKATA, idle)
    assert_same_digest(digest, digest_minutes(minutes, KOLKATA, idle))
    days = {r["job_id"]: r for r in digest.job_days.iter_rows(named=True)}
    assert days["7"]["idle_held_minutes"] == pytest.approx(60 / 7)
    assert days["7"]["gpu_minutes"] == pytest.approx(60 / 7)
    assert days["7"]["util_minutes"] == 60  # the utilisation's minutes are the instance's own
    assert days["8"]["idle_held_minutes"] == 60
    assert sorted(digest.idle_runs["minutes"].to_list()) == [60, 60]
    jobs = [job(7, start=0, end=None, gpus=1, gpu_equivalents=1 / 7, submit_time=START, start_time=START),
            job(8, start=0, end=None, submit_time=START, start_time=START)]
    month = inputs(gpu_minutes=minutes, jobs=jobs, month=Month(2026, 10))
    cfg = config("\n[idle]\nmin_minutes = 10\n")
    per_job = {r["job_id"]: r for r in idle_by_job(month, cfg).iter_rows(named=True)}
    assert (per_job["7"]["gpu_minutes"], per_job["7"]["idle_held_minutes"], per_job["7"]["busy_minutes"]) == (9, 9, 0)
    assert per_job["8"]["idle_held_minutes"] == 60


def test_slots_are_hours_where_the_zone_allows_and_quarter_hours_elsewhere() -> None:
    from warehouse.digest.statements import slot_minutes

    october = (datetime(2026, 10, 1), datetime(2026, 11, 1))
    assert slot_minutes(Window(*october, "UTC")) == 60
    assert slot_minutes(Window(*october, "Asia/Shanghai")) == 60
    assert slot_minutes(Window(datetime(2026, 10, 25), datetime(2026, 11, 5), "America/New_York")) == 60  # DST ends
    assert slot_minutes(Window(*october, "Asia/Kolkata")) == 15  # +5:30
    assert slot_minutes(Window(*october, "Asia/Kathmandu")) == 15  # +5:45
    # Lord Howe's daylight time adds half an hour: whole hours in its winter, not around its October change.
    assert slot_minutes(Window(datetime(2026, 6, 1), datetime(2026, 6, 30), "Australia/Lord_Howe")) == 15  # +10:30
    assert slot_minutes(Window(*october, "Australia/Lord_Howe")) == 15
    assert slot_minutes(Window(datetime(2026, 10, 1), datetime(2026, 10, 1), "UTC")) == 60  # an empty window
