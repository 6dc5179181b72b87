"""Queue evaluator for the batch-like scenarios: queue wait (p50, p95, longest), success rate and
record completeness.

Per queue ("<cluster>/<partition>") and scenario:
- waits are start - eligible over the records that started in the window (percentiles are linear
  interpolations between order statistics, as numpy and polars compute them); the same figures
  per team (subject_kind `queue_team`, "<queue>:<team>") and per QOS, the priority class
  (`queue_qos`, "<queue>:<qos>"), are breakdowns: they carry no objective of their own;
- success_rate is COMPLETED / records that reached an outcome in the window: running records have
  not ended, and PREEMPTED or REQUEUED records were interrupted (sla.interruptions counts them);
- record_completeness is the share of started records carrying eligible time, GPUs allocated and,
  once ended, an end state.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from gpusteward import evidence as ev
from gpusteward.config.schema import Config
from gpusteward.domain import INTERRUPTED_STATES, SUCCESS_STATES, Scenario
from sla.common import (
    base_state,
    classified_jobs,
    ended_in,
    events_within,
    job_label,
    result_row,
    results_frame,
    slo_for,
    started_in,
    window_of,
)
from sla.inputs import EvaluationInputs
from sla.usage import queue_name, wait_seconds

BATCH_LIKE = frozenset(
    {Scenario.TRAINING, Scenario.FINE_TUNING, Scenario.EVALUATION, Scenario.BATCH_INFERENCE, Scenario.GENERAL_COMPUTE}
)
_NOT_ENDED = ("RUNNING", "PENDING", "REQUEUE_HOLD", "SUSPENDED")
_WAITS = ("queue_wait_p50", "queue_wait_p95", "queue_wait_max")
# subject_kind -> the column a queue's waits are broken down by
BREAKDOWNS = {"queue_team": "team", "queue_qos": "qos"}


def batch_like_jobs(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """The job records of the batch-like scenarios, with their `queue` and `base_state`: what the
    queue, outcome and interruption evaluators all start from."""
    jobs = classified_jobs(inputs, config).filter(pl.col("scenario").is_in([s.value for s in BATCH_LIKE]))
    return jobs.with_columns(queue_name(), base_state().alias("base_state"))


class QueueEvaluator:
    """Built-in evaluator; registered in `default_registry()` like any add-on."""

    @property
    def scenarios(self) -> frozenset[Scenario]:
        return BATCH_LIKE

    def evaluate(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        window = window_of(inputs)
        jobs = batch_like_jobs(inputs, config).with_columns(wait_seconds().alias("wait_s"))
        started = jobs.filter(started_in(window))
        outcome = ended_in(window) & ~pl.col("base_state").is_in([*_NOT_ENDED, *INTERRUPTED_STATES])
        rows: list[dict[str, Any]] = []
        rows += self._waits(inputs, config, started)
        for kind, column in BREAKDOWNS.items():
            rows += self._waits(inputs, config, started, kind=kind, by=column)
        rows += self._success(inputs, config, jobs.filter(outcome))
        rows += self._records(inputs, config, started)
        return results_frame(rows)

    def _waits(
        self, inputs: EvaluationInputs, config: Config, started: pl.DataFrame, *, kind: str = "queue",
        by: str | None = None,
    ) -> list[dict[str, Any]]:
        if by is not None:
            started = started.with_columns(
                pl.concat_str(pl.col("queue"), pl.lit(":"), pl.col(by).fill_null("?")).alias("queue")
            )
        stats = (
            started.group_by("queue", "scenario")
            .agg(
                pl.len().alias("n"),
                pl.col("wait_s").is_not_null().sum().alias("with_wait"),
                pl.col("wait_s").quantile(0.5, interpolation="linear").alias("p50"),
                pl.col("wait_s").quantile(0.95, interpolation="linear").alias("p95"),
                pl.col("wait_s").max().alias("max"),
                pl.col("wait_s").drop_nulls().alias("waits"),
                # The longest wait names its record so a reader can find it.
                job_label().sort_by(pl.col("wait_s").fill_null(-1.0), descending=True).first().alias("worst_job"),
                pl.col("team").sort_by(pl.col("wait_s").fill_null(-1.0), descending=True).first().alias("worst_team"),
            )
            .sort("scenario", "queue")
        )
        rows: list[dict[str, Any]] = []
        for s in stats.iter_rows(named=True):
            completeness = s["with_wait"] / s["n"] if s["n"] else None
            evidence = ev.encode([
                ev.part("started", n=int(s["with_wait"])),
                ev.part("longest_wait_job", wait=ev.duration(s["max"]), job=str(s["worst_job"]),
                        team=str(s["worst_team"])),
            ])
            for indicator, value in zip(_WAITS, (s["p50"], s["p95"], s["max"]), strict=True):
                slo = slo_for(config, s["scenario"], indicator) if by is None else None
                rows.append(result_row(
                    inputs, scenario=s["scenario"], subject_kind=kind, subject=s["queue"], indicator=indicator,
                    value=value, objective=slo.threshold if slo else None, slo=slo, rows=int(s["with_wait"]),
                    completeness=completeness, evidence=evidence, events=events_within(s["waits"], slo),
                ))
        return rows

    def _success(self, inputs: EvaluationInputs, config: Config, ended: pl.DataFrame) -> list[dict[str, Any]]:
        stats = (
            ended.group_by("queue", "scenario")
            .agg(
                pl.len().alias("n"),
                pl.col("base_state").is_in(list(SUCCESS_STATES)).sum().alias("ok"),
                pl.col("base_state").is_null().sum().alias("unknown"),
                pl.col("base_state").drop_nulls().value_counts(name="count").alias("states"),
            )
            .sort("scenario", "queue")
        )
        rows: list[dict[str, Any]] = []
        for s in stats.iter_rows(named=True):
            known = s["n"] - s["unknown"]
            value = s["ok"] / known if known else None
            # Most frequent first, ties by name, so the text is the same on every run.
            states = sorted(s["states"], key=lambda c: (-c["count"], c["base_state"]))
            others = tuple(
                ev.part("state_count", n=int(c["count"]), state=str(c["base_state"]))
                for c in states if c["base_state"] not in SUCCESS_STATES
            )
            parts = [ev.part("completed_share", n=int(s["ok"]), m=int(known), p=ev.ratio(value))]
            if others:
                parts.append(ev.part("others", list=others))
            evidence = ev.encode(parts)
            slo = slo_for(config, s["scenario"], "success_rate")
            rows.append(result_row(
                inputs, scenario=s["scenario"], subject_kind="queue", subject=s["queue"], indicator="success_rate",
                value=value, objective=slo.threshold if slo else None, slo=slo, rows=int(known),
                completeness=known / s["n"] if s["n"] else None, evidence=evidence,
            ))
        return rows

    def _records(self, inputs: EvaluationInputs, config: Config, started: pl.DataFrame) -> list[dict[str, Any]]:
        ended_without_state = pl.col("end_time").is_not_null() & pl.col("base_state").is_null()
        complete = pl.col("eligible_time").is_not_null() & pl.col("gpus_allocated").is_not_null() & ~ended_without_state
        stats = (
            started.group_by("queue", "scenario")
            .agg(
                pl.len().alias("n"),
                complete.sum().alias("complete"),
                pl.col("eligible_time").is_null().sum().alias("no_eligible"),
                pl.col("gpus_allocated").is_null().sum().alias("no_gpus"),
                ended_without_state.sum().alias("no_state"),
            )
            .sort("scenario", "queue")
        )
        rows: list[dict[str, Any]] = []
        for s in stats.iter_rows(named=True):
            value = s["complete"] / s["n"] if s["n"] else None
            slo = slo_for(config, s["scenario"], "record_completeness")
            evidence = ev.encode([
                ev.part("complete_records", n=int(s["complete"]), m=int(s["n"])),
                ev.part("missing_fields", a=int(s["no_eligible"]), b=int(s["no_gpus"]), c=int(s["no_state"])),
            ])
            rows.append(result_row(
                inputs, scenario=s["scenario"], subject_kind="queue", subject=s["queue"],
                indicator="record_completeness", value=value, objective=slo.threshold if slo else None, slo=slo,
                rows=int(s["n"]), completeness=1.0 if s["n"] else None, evidence=evidence,
            ))
        return rows
