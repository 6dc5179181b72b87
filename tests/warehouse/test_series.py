"""The dashboards' series: queue wait p95 per local day and queue, computed in DuckDB, checked against
the queue evaluator's definition (start - eligible, clipped at 0, linear percentile) written in polars."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date, datetime, timedelta
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpusteward import tables
from gpusteward.domain import Month
from tests.reports.fixtures import MONTH as FIXTURE_MONTH
from tests.reports.fixtures import demo_outputs
from warehouse import Warehouse
from warehouse.readmodel import load_read_model, publish, snapshot
from warehouse.series import queue_wait_daily

MONTH = Month(2026, 10, "Asia/Shanghai")  # starts 2026-09-30 16:00 UTC


def _jobs(rows: Sequence[tuple[str, int, datetime, datetime | None]]) -> pl.DataFrame:
    """(partition, job id, start, eligible) -> JOBS rows on cluster east."""
    return tables.conform(pl.DataFrame({
        "cluster": ["east"] * len(rows),
        "job_id": [r[1] for r in rows],
        "submit_time": [r[3] or r[2] for r in rows],
        "partition": [r[0] for r in rows],
        "start_time": [r[2] for r in rows],
        "eligible_time": [r[3] for r in rows],
        "state": ["COMPLETED"] * len(rows),
    }, schema_overrides={"submit_time": pl.Datetime("us"), "start_time": pl.Datetime("us"),
                         "eligible_time": pl.Datetime("us")}), tables.JOBS)


def _reference(jobs: pl.DataFrame, month: Month) -> pl.DataFrame:
    start, end = month.start.replace(tzinfo=None), month.end.replace(tzinfo=None)
    started = jobs.filter(pl.col("start_time").is_between(start, end, closed="left")
                          & pl.col("eligible_time").is_not_null())
    return (
        started.with_columns(
            pl.col("start_time").dt.replace_time_zone("UTC").dt.convert_time_zone(month.tz).dt.date().alias("day"),
            pl.concat_str(pl.col("cluster"), pl.lit("/"), pl.col("partition")).alias("queue"),
            ((pl.col("start_time") - pl.col("eligible_time")).dt.total_microseconds() / 1e6).clip(lower_bound=0.0)
            .alias("wait_s"),
        )
        .group_by("day", "queue")
        .agg(pl.len().cast(pl.Int64).alias("started"),
             pl.col("wait_s").quantile(0.95, interpolation="linear").alias("wait_p95_s"),
             pl.col("wait_s").max().alias("wait_max_s"))
        .sort("day", "queue")
    )


def test_days_are_the_pools_and_the_window_is_the_months(wh: Warehouse) -> None:
    jobs = _jobs([
        ("train", 1, datetime(2026, 9, 30, 15, 59), datetime(2026, 9, 30, 10)),  # September in Shanghai: out
        ("train", 2, datetime(2026, 9, 30, 16, 0), datetime(2026, 9, 30, 15)),  # 1 Oct 00:00 local: a 1h wait
        ("train", 3, datetime(2026, 10, 1, 15, 30), datetime(2026, 10, 1, 15, 40)),  # skew: clipped to 0
        ("train", 4, datetime(2026, 10, 1, 16, 30), datetime(2026, 10, 1, 14, 30)),  # 2 Oct local, 2h
        ("eval", 5, datetime(2026, 10, 1, 3), None),  # no eligible time: no wait to count
    ])
    wh.ingest("test", {"jobs": jobs})
    daily = queue_wait_daily(wh, MONTH)
    assert daily.to_dicts() == [
        {"day": date(2026, 10, 1), "zone": "Asia/Shanghai", "queue": "east/train", "started": 2, "wait_p95_s": 3420.0,
         "wait_max_s": 3600.0},
        {"day": date(2026, 10, 2), "zone": "Asia/Shanghai", "queue": "east/train", "started": 1, "wait_p95_s": 7200.0,
         "wait_max_s": 7200.0},
    ]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(["train", "eval"]), st.integers(-2 * 24 * 60, 33 * 24 * 60),
                          st.integers(-30, 6 * 60)), min_size=1, max_size=40))
def test_matches_the_evaluators_definition(wh: Warehouse, draws: list[tuple[str, int, int]]) -> None:
    base = datetime(2026, 10, 1)
    rows = [(p, i, base + timedelta(minutes=s), base + timedelta(minutes=s - w)) for i, (p, s, w) in enumerate(draws)]
    jobs = _jobs(rows)
    wh.connection.execute("DELETE FROM jobs")
    wh.ingest("drawn", {"jobs": jobs})
    got, expected = queue_wait_daily(wh, MONTH), _reference(jobs, MONTH)
    assert got.select("day", "queue", "started").equals(expected.select("day", "queue", "started"))
    for column in ("wait_p95_s", "wait_max_s"):
        differences = (got[column] - expected[column]).abs().to_list()
        assert all(d <= 1e-6 for d in differences), (column, differences)


def test_the_read_model_carries_the_series(wh: Warehouse, tmp_path: Path) -> None:
    wh.ingest("test", {"jobs": _jobs([("train", 1, datetime(2026, 11, 5, 3), datetime(2026, 11, 5, 2))])})
    wh.store_month_outputs(demo_outputs())  # the read model holds the months that were evaluated
    publish(snapshot(wh, now=datetime(2026, 12, 1), tz="Asia/Shanghai"), tmp_path / "rm")
    daily = load_read_model(tmp_path / "rm").queue_wait_daily(FIXTURE_MONTH)
    assert daily.to_dicts() == [{"day": date(2026, 11, 5), "zone": "Asia/Shanghai", "queue": "east/train", "started": 1,
                                 "wait_p95_s": 3600.0, "wait_max_s": 3600.0}]
