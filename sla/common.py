"""Helpers every evaluator shares: the evaluation window, objectives, result rows, job overlaps.

Kept free of any one scenario's rules so that an add-on evaluator can use them the same way the
built-ins do.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import polars as pl

from gpusteward.attribution import classify_jobs
from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from gpusteward.durations import format_duration
from gpusteward.indicators import INDICATORS, Direction
from gpusteward.objectives import Objective, objective_for
from gpusteward.tables import JOBS, conform
from sla.inputs import EvaluationInputs
from sla.results import SLA_RESULTS

ALL_SCENARIOS = "all"
"""`scenario` of result rows that span every scenario (fairness is about a team's whole use)."""

MINUTE = timedelta(minutes=1)


def naive_utc(moment: datetime) -> datetime:
    """The frames hold naive UTC timestamps; configs and clocks hand out aware ones."""
    if moment.tzinfo is None:
        return moment
    return moment.astimezone(UTC).replace(tzinfo=None)


@dataclass(frozen=True)
class Window:
    """The stretch of time a month's evaluation covers, as naive UTC: [start, end).

    `end` is the month's end, or `data_end` when the month is still in progress: time after the last
    telemetry is not "no data", it simply has not happened yet. `data_end` is exclusive, the minute
    after the last telemetry minute, as the warehouse hands it out (warehouse.queries.evaluation_inputs).
    """

    start: datetime
    end: datetime

    @property
    def minutes(self) -> int:
        return max(0, int((self.end - self.start) / MINUTE))

    @property
    def hours(self) -> float:
        return self.minutes / 60.0


def window_of(inputs: EvaluationInputs) -> Window:
    start = naive_utc(inputs.month.start)
    end = naive_utc(inputs.month.end)
    if inputs.data_end is not None:
        end = min(end, naive_utc(inputs.data_end))
    return Window(start, max(start, end))


def slo_for(config: Config, scenario: Scenario | str, indicator: str) -> Objective | None:
    """The objective of `indicator` in `scenario`: the configured one, else the built-in default, if any."""
    return objective_for(config, scenario, indicator)


def threshold_of(config: Config, scenario: Scenario | str, indicator: str) -> float | None:
    found = objective_for(config, scenario, indicator)
    return None if found is None else found.threshold


def met(indicator: str, value: float | None, objective: float | None) -> bool | None:
    if value is None or objective is None or math.isnan(value):
        return None
    if INDICATORS[indicator].direction is Direction.AT_MOST:
        return value <= objective
    return value >= objective


def result_row(
    inputs: EvaluationInputs,
    *,
    scenario: str,
    subject_kind: str,
    subject: str,
    indicator: str,
    value: float | None,
    objective: float | None,
    rows: int,
    completeness: float | None,
    evidence: str,
    budget_left: float | None = None,
) -> dict[str, Any]:
    """One SLA_RESULTS row; `met` follows the indicator's direction from the catalogue."""
    if value is not None and math.isnan(value):
        value = None
    return {
        "month": str(inputs.month),
        "scenario": scenario,
        "subject_kind": subject_kind,
        "subject": subject,
        "indicator": indicator,
        "value": value,
        "objective": objective,
        "met": met(indicator, value, objective),
        "budget_left": budget_left,
        "rows": rows,
        "completeness": None if completeness is None else min(1.0, max(0.0, completeness)),
        "evidence": evidence,
    }


def results_frame(rows: Iterable[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=SLA_RESULTS, orient="row")


def classified_jobs(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """The month's job records with `scenario` and `team`; tolerant of frames missing optional columns."""
    jobs = conform(inputs.jobs, JOBS)
    return classify_jobs(config, jobs)


def with_overlap(jobs: pl.DataFrame, window: Window) -> pl.DataFrame:
    """Add `held_s`: seconds of [start, end or window end) inside the window (0 when never started).

    A running job has a null end: it holds its GPUs up to the end of the data.
    """
    start = pl.max_horizontal(pl.col("start_time"), pl.lit(window.start))
    end = pl.min_horizontal(pl.col("end_time").fill_null(pl.lit(window.end)), pl.lit(window.end))
    held = (end - start).dt.total_microseconds() / 1e6
    return jobs.with_columns(
        pl.when(pl.col("start_time").is_null()).then(0.0).otherwise(held.clip(lower_bound=0.0)).alias("held_s")
    )


def job_label() -> pl.Expr:
    """How a job is named to a reader: `123_4` for task 4 of array 123, as sacct and squeue print it
    (the task's own id, JobIDRaw, means nothing to its owner), else its job id."""
    task = pl.col("array_task_id").cast(pl.Utf8).fill_null("?")
    return (
        pl.when(pl.col("array_job_id").is_not_null())
        .then(pl.format("{}_{}", pl.col("array_job_id"), task))
        .otherwise(pl.col("job_id").cast(pl.Utf8))
    )


def started_in(window: Window) -> pl.Expr:
    return pl.col("start_time").is_not_null() & pl.col("start_time").is_between(
        window.start, window.end, closed="left"
    )


def ended_in(window: Window) -> pl.Expr:
    return pl.col("end_time").is_not_null() & pl.col("end_time").is_between(window.start, window.end, closed="left")


def base_state() -> pl.Expr:
    """sacct prints e.g. "CANCELLED by 1000"; the first word is the state."""
    return pl.col("state").str.split(" ").list.first().str.to_uppercase()


def human_duration(seconds: float | None) -> str:
    """A readable duration for evidence text: "0.35s", "15.1s", "4m10s", "2h5m" (minutes above an hour)."""
    if seconds is None or math.isnan(seconds):
        return "n/a"
    if seconds < 60:
        # Latencies live here: keep three significant digits rather than rounding 0.35s to 0s.
        return f"{seconds:.3g}s"
    step = 60 if seconds >= 3600 else 1
    return format_duration(timedelta(seconds=round(seconds / step) * step))


def fmt_ratio(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value * 100:.1f}%"
