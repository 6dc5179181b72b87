"""Helpers every evaluator shares: the evaluation window, objectives, result rows, job overlaps.

Kept free of any one scenario's rules so that an add-on evaluator can use them the same way the
built-ins do.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import polars as pl

from gpusteward.attribution import classify_jobs
from gpusteward.capacity import with_shared_gpus
from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from gpusteward.durations import format_duration
from gpusteward.indicators import INDICATORS, Direction, Judgement
from gpusteward.objectives import Objective, objective_for
from gpusteward.tables import JOBS, conform
from sla.budget import budget_left as budget_of
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
    tz: str = "UTC"  # the pool's time zone: where its days begin (gpusteward.domain.Month)

    @property
    def minutes(self) -> int:
        return max(0, int((self.end - self.start) / MINUTE))

    @property
    def hours(self) -> float:
        return self.minutes / 60.0


def window_of(inputs: EvaluationInputs) -> Window:
    """The month's window, or the rolling window `inputs.rolling` that ends where the month's does."""
    start = naive_utc(inputs.month.start)
    end = naive_utc(inputs.month.end)
    if inputs.data_end is not None:
        end = min(end, naive_utc(inputs.data_end))
    end = max(start, end)
    if inputs.rolling is not None:
        # Rolling windows are at most 28 days; only a month still in progress clips one at its start.
        start = max(start, end - inputs.rolling)
    return Window(start, end, inputs.month.tz)


def local_date(moment: pl.Expr, tz: str) -> pl.Expr:
    """The date in `tz` of a naive UTC timestamp column."""
    if tz == "UTC":
        return moment.dt.date()
    return moment.dt.replace_time_zone("UTC").dt.convert_time_zone(tz).dt.date()


def local_midnight(day: pl.Expr, tz: str) -> pl.Expr:
    """Naive UTC instant at which the date `day` begins in `tz` (a DST day lasts 23 or 25 hours)."""
    midnight = day.cast(pl.Datetime("us"))
    if tz == "UTC":
        return midnight
    # Where a DST change skips midnight itself, the day begins at the first instant that exists.
    local = midnight.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null")
    later = (midnight + pl.duration(hours=1)).dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null")
    return pl.coalesce(local, later).dt.convert_time_zone("UTC").dt.replace_time_zone(None)


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


@dataclass(frozen=True)
class Events:
    """Good events of `total` for an indicator judged by events: e.g. waits within the threshold."""

    good: float
    total: float

    @property
    def share(self) -> float | None:
        return self.good / self.total if self.total > 0 else None


def events_within(values: Iterable[float] | None, slo: Objective | None) -> Events | None:
    """Events of a duration indicator (waits, recovery times): good when at most the threshold."""
    if slo is None or values is None:
        return None
    # One pass in numpy (a month's waits run to 100k a queue): None and NaN are unknown.
    array = np.array(values if isinstance(values, (list, tuple)) else list(values), dtype=np.float64)
    known = array[~np.isnan(array)]
    return Events(float(np.count_nonzero(known <= slo.threshold)), float(known.size))


def judge(
    indicator: str, value: float | None, slo: Objective | None, events: Events | None
) -> tuple[bool | None, float | None]:
    """(met, error budget left) of a value under its objective (docs/evaluation.md#objectives).

    - EVENTS indicators: met when the good share reaches the target; the budget is 1 - target.
    - SHARE indicators: the value is the share of good (at_least) or bad (at_most) events and the
      threshold the share required, so the budget is the bad share the threshold allows.
    - LEVEL indicators: value against threshold; no budget.
    """
    if slo is None:
        return None, None
    judgement = INDICATORS[indicator].judgement
    if judgement is Judgement.EVENTS:
        if events is None or events.total <= 0:
            return None, None
        good = events.good / events.total
        # Compare with a little slack: 19 of 20 waits within the threshold meet a 0.95 target exactly.
        return good >= slo.target - 1e-9, budget_of(events.total - events.good, events.total, slo.target)
    verdict = met(indicator, value, slo.threshold)
    if judgement is Judgement.SHARE and value is not None and not math.isnan(value):
        if INDICATORS[indicator].direction is Direction.AT_MOST:
            return verdict, budget_of(value, 1.0, 1.0 - slo.threshold)
        return verdict, budget_of(1.0 - value, 1.0, slo.threshold)
    return verdict, None


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
    slo: Objective | None = None,
    events: Events | None = None,
) -> dict[str, Any]:
    """One SLA_RESULTS row. With `slo`, `met` and `budget_left` follow `judge` (an explicit
    `budget_left` wins); without, `met` compares the value with `objective` in the indicator's direction."""
    if value is not None and math.isnan(value):
        value = None
    verdict = met(indicator, value, objective)
    if slo is not None:
        verdict, judged_budget = judge(indicator, value, slo, events)
        budget_left = judged_budget if budget_left is None else budget_left
    return {
        "month": str(inputs.month),
        "scenario": scenario,
        "subject_kind": subject_kind,
        "subject": subject,
        "indicator": indicator,
        "value": value,
        "objective": objective,
        "met": verdict,
        "budget_left": budget_left,
        "rows": rows,
        "completeness": None if completeness is None else min(1.0, max(0.0, completeness)),
        "evidence": evidence,
    }


def results_frame(rows: Iterable[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=SLA_RESULTS, orient="row")


def classified_jobs(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """The month's job records with `scenario` and `team`; tolerant of frames missing optional columns.
    Computed once per inputs and config (`per_config`)."""
    return per_config(inputs, config, "classified_jobs", lambda: with_shared_gpus(
        classify_jobs(config, conform(inputs.jobs, JOBS)), config.capacity.shared))


def per_config(
    inputs: EvaluationInputs, config: Config, name: str, compute: Callable[[], pl.DataFrame]
) -> pl.DataFrame:
    """`compute()`'s frame, once per inputs, config (by identity) and `name` (`inputs.derived_cache`);
    `compute` must depend on nothing else. A caller trying many configs keeps the last four."""
    held = inputs.derived_cache.setdefault(name, [])
    for seen, frame in held:
        if seen is config:
            return frame
    frame = compute()
    held[:] = [*held[-3:], (config, frame)]
    return frame


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

