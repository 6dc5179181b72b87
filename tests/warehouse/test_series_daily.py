"""Daily series: idle-held GPU-hours per team from the evaluated days (whose days add up to the idle
evaluator's per-job figures), and preempted records per day, cluster and scenario (whose days add up to
the ledger's preemptions), on small hand-built warehouses and drawn at random."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timedelta

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusteward import tables
from gpusteward.config.schema import Config, RuleConfig, RuleMatch
from gpusteward.domain import Month, Scenario
from sla.daily import daily_usage
from sla.idle import idle_by_job
from sla.ledger import ledger
from tests.reports.fixtures import empty_outputs
from warehouse import Warehouse
from warehouse.series_daily import idle_daily, preemptions_daily

CONFIG = Config(rules=[
    RuleConfig(scenario=Scenario.TRAINING, match=RuleMatch(partition="train"), team="vision"),
    RuleConfig(scenario=Scenario.INTERACTIVE, match=RuleMatch(partition="dev"), team="nlp"),
])
MONTH = Month(2026, 11)


def _minutes(job: str, start: datetime, utils: list[tuple[float, float]]) -> pl.DataFrame:
    """One GPU of host `h-<job>`: a minute per (gpu_util, fb_used_mib) from `start`."""
    return tables.conform(pl.DataFrame([
        {"cluster": "east", "host": f"h-{job}", "gpu": 0, "ts": start + timedelta(minutes=i), "job_id": job,
         "gpu_util": u, "fb_used_mib": fb}
        for i, (u, fb) in enumerate(utils)
    ], schema_overrides={"ts": pl.Datetime("us")}), tables.GPU_MINUTES)


def _job(job_id: int, partition: str, start: datetime, end: datetime | None, state: str = "COMPLETED",
         ) -> dict[str, object]:
    return {"cluster": "east", "job_id": job_id, "partition": partition, "submit_time": start, "start_time": start,
            "end_time": end, "state": state, "gpus_allocated": 1}


def _evaluate(wh: Warehouse, config: Config) -> None:
    """Store the month's daily usage and idle per job as the evaluation computes them."""
    inputs = wh.evaluation_inputs(MONTH)
    outputs = replace(empty_outputs(), month=MONTH, idle=idle_by_job(inputs, config),
                      daily_usage=daily_usage(inputs, config))
    wh.store_month_outputs(outputs)


def test_idle_held_hours_fall_on_the_days_they_happened(wh: Warehouse) -> None:
    start = datetime(2026, 11, 1, 23)
    # 30 busy minutes, then an hour at 0% with 2 GiB held across midnight, then 30 busy minutes
    utils = [(80.0, 4096.0)] * 30 + [(0.0, 2048.0)] * 60 + [(80.0, 4096.0)] * 30
    wh.ingest("test", {"gpu_minutes": _minutes("7", start, utils),
                       "jobs": tables.conform(pl.DataFrame([_job(7, "train", start, start + timedelta(hours=2))]),
                                              tables.JOBS)})
    _evaluate(wh, CONFIG)
    got = idle_daily(wh, MONTH)
    assert got.select("day", "scenario", "team", "idle_held_gpu_hours", "idle_gpu_hours").rows() == [
        (date(2026, 11, 1), "training", "vision", 0.5, 0.0),
        (date(2026, 11, 2), "training", "vision", 0.5, 0.0),
    ]
    assert got["gpu_hours"].to_list() == [1.0, 1.0]


def test_a_month_stored_before_idle_days_has_no_idle_hours_not_zero(wh: Warehouse) -> None:
    daily = pl.DataFrame([{"day": date(2026, 11, 3), "scenario": "training", "team": "vision", "gpu_hours": 5.0,
                           "util_minutes": 300, "util_mean": 0.4}])  # no idle columns, as before migration 025
    wh.store_month_outputs(replace(empty_outputs(), month=MONTH, daily_usage=daily))
    got = idle_daily(wh, MONTH)
    assert got.select("gpu_hours", "idle_gpu_hours", "idle_held_gpu_hours").rows() == [(5.0, None, None)]


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["train", "dev"]), st.integers(-60, 3 * 24 * 60),
                          st.lists(st.sampled_from([(0.0, 0.0), (0.0, 2048.0), (1.0, 2048.0), (90.0, 8192.0)]),
                                   min_size=1, max_size=100)),
                min_size=1, max_size=4))
def test_a_teams_days_add_up_to_its_idle_by_job(
    wh: Warehouse, jobs: list[tuple[str, int, list[tuple[float, float]]]]
) -> None:
    for table in ("gpu_minute_rows", "jobs", "daily_usage", "idle_by_job"):
        wh.connection.execute(f"DELETE FROM {table}")
    base = datetime(2026, 11, 1)
    records = []
    for i, (partition, offset, utils) in enumerate(jobs):
        # a minute's run of each state, so idle runs reach the 30 minutes that count
        minutes = [u for u in utils for _ in range(10)]
        start = base + timedelta(minutes=offset)
        wh.ingest(f"j{i}", {"gpu_minutes": _minutes(str(i), start, minutes)})
        records.append(_job(i, partition, start, start + timedelta(minutes=len(minutes))))
    wh.ingest("jobs", {"jobs": tables.conform(pl.DataFrame(records), tables.JOBS)})
    _evaluate(wh, CONFIG)
    days = idle_daily(wh, MONTH).group_by("team").agg(pl.col("idle_held_gpu_hours", "idle_gpu_hours").sum())
    jobs_idle = wh.month_outputs(MONTH).idle.group_by("team").agg(
        (pl.col("idle_held_minutes").sum() / 60).alias("held"), (pl.col("idle_minutes").sum() / 60).alias("idle"))
    expected = {r["team"]: (r["held"], r["idle"]) for r in jobs_idle.iter_rows(named=True) if r["held"] or r["idle"]}
    got = {r["team"]: (r["idle_held_gpu_hours"], r["idle_gpu_hours"]) for r in days.iter_rows(named=True)
           if r["idle_held_gpu_hours"] or r["idle_gpu_hours"]}
    assert got.keys() == expected.keys()
    for team, (held, idle) in expected.items():
        assert got[team] == (pytest.approx(held), pytest.approx(idle))


def test_preemptions_by_local_day_cluster_and_scenario(wh: Warehouse) -> None:
    month = Month(2026, 11, "Asia/Shanghai")  # begins 2026-10-31 16:00 UTC
    t = datetime(2026, 10, 31, 15)
    jobs = [
        _job(1, "train", t - timedelta(hours=5), t, "PREEMPTED"),  # 31 Oct 23:00 local: October
        _job(2, "train", t, t + timedelta(hours=1), "PREEMPTED"),  # 1 Nov 00:00 local
        _job(3, "train", t, t + timedelta(hours=2), "COMPLETED"),
        _job(4, "dev", t, t + timedelta(hours=3), "preempted"),  # a lower-case state still counts
        _job(5, "train", t, t + timedelta(hours=30), "CANCELLED by 1000"),  # 2 Nov local
        _job(6, "other", t, t + timedelta(hours=31), "PREEMPTED"),  # no rule: unattributed
        _job(7, "train", t, None, "RUNNING"),  # not ended
    ]
    wh.ingest("test", {"jobs": tables.conform(pl.DataFrame(jobs), tables.JOBS)})
    got = preemptions_daily(wh, month, CONFIG)
    assert got.drop("zone").rows() == [
        (date(2026, 11, 1), "east", "interactive", "nlp", 1, 1),
        (date(2026, 11, 1), "east", "training", "vision", 2, 1),
        (date(2026, 11, 2), "east", "training", "vision", 1, 0),
        (date(2026, 11, 2), "east", "unattributed", "unattributed", 1, 1),
    ]
    assert set(got["zone"]) == {"Asia/Shanghai"}


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["train", "dev", "other"]), st.integers(-2 * 24 * 60, 32 * 24 * 60),
                          st.sampled_from(["PREEMPTED", "COMPLETED", "FAILED", "REQUEUED"])), min_size=1, max_size=40))
def test_the_days_add_up_to_the_ledgers_preemptions(wh: Warehouse, draws: list[tuple[str, int, str]]) -> None:
    wh.connection.execute("DELETE FROM jobs")
    base = datetime(2026, 11, 1)
    records = [_job(i, p, base + timedelta(minutes=m - 90), base + timedelta(minutes=m), s)
               for i, (p, m, s) in enumerate(draws)]
    wh.ingest("drawn", {"jobs": tables.conform(pl.DataFrame(records), tables.JOBS)})
    got = preemptions_daily(wh, MONTH, CONFIG).group_by("cluster", "scenario").agg(pl.col("preempted").sum())
    led = ledger(wh.evaluation_inputs(MONTH), CONFIG).filter(pl.col("action") == "preemption")
    expected = led.group_by("cluster", "scenario").agg(pl.len().alias("preempted"))
    assert dict(got.filter(pl.col("preempted") > 0).select("scenario", "preempted").rows()) == dict(
        expected.select("scenario", "preempted").rows())
