"""Daily GPU-hours and utilisation per scenario and team."""

from __future__ import annotations

from datetime import date

import polars as pl
import pytest

from gpusteward.domain import UNATTRIBUTED
from sla.daily import daily_usage
from sla.results import DAILY_USAGE
from sla.usage import queue_usage, usage_by_team
from tests.sla.builders import at, config, inputs, job, minutes

DAY = 24 * 60


def test_a_job_across_midnight_is_split_per_day_and_sums_to_the_month_usage() -> None:
    # 2 GPUs from 22:00 on the 1st to 02:00 on the 3rd: 4 + 48 + 4 GPU-hours.
    jobs = [job(1, start=22 * 60, end=2 * DAY + 120, gpus=2), job(2, partition="infer", account="vision",
                                                                   start=60, end=90)]
    ins = inputs(jobs=jobs)
    out = daily_usage(ins, config())
    assert out.schema == DAILY_USAGE
    train = out.filter(pl.col("scenario") == "training")
    assert train["day"].to_list() == [date(2026, 3, 1), date(2026, 3, 2), date(2026, 3, 3)]
    assert train["gpu_hours"].to_list() == pytest.approx([4.0, 48.0, 4.0])
    assert train["team"].unique().to_list() == ["nlp"]
    infer = out.filter(pl.col("scenario") == "online_inference").row(0, named=True)
    assert (infer["day"], infer["team"], infer["gpu_hours"]) == (date(2026, 3, 1), "vision", pytest.approx(0.5))
    month = usage_by_team(queue_usage(ins, config()))["gpu_hours"].sum()
    assert out["gpu_hours"].sum() == pytest.approx(month)


def test_a_running_job_holds_up_to_the_end_of_the_data_and_not_beyond() -> None:
    ins = inputs(jobs=[job(1, start=DAY - 60, end=None)], data_end=at(DAY + 30))
    out = daily_usage(ins, config())
    assert out["gpu_hours"].to_list() == pytest.approx([1.0, 0.5])


def test_utilisation_is_the_mean_of_minutes_with_data_attributed_through_the_job() -> None:
    gm = minutes("1", [10, 30, None, 50]) + minutes("99", [80], host="h2")
    out = daily_usage(inputs(jobs=[job(1, start=0, end=10)], gpu_minutes=gm), config())
    train = out.filter(pl.col("scenario") == "training").row(0, named=True)
    assert train["util_minutes"] == 3  # the missing minute is left out, never 0
    assert train["util_mean"] == pytest.approx(0.30)
    stray = out.filter(pl.col("scenario") == UNATTRIBUTED).row(0, named=True)
    assert (stray["gpu_hours"], stray["util_minutes"], stray["util_mean"]) == (0.0, 1, pytest.approx(0.8))


def test_days_without_telemetry_have_no_utilisation() -> None:
    out = daily_usage(inputs(jobs=[job(1, start=0, end=60)]), config())
    row = out.row(0, named=True)
    assert (row["util_minutes"], row["util_mean"]) == (0, None)


def test_nothing_in_the_month_gives_an_empty_frame_with_the_schema() -> None:
    out = daily_usage(inputs(jobs=[job(1, submit=-DAY, start=-DAY, end=-60)]), config())
    assert out.is_empty()
    assert out.schema == DAILY_USAGE
