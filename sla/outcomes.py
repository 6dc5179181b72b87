"""What batch-like work delivered: efficiency while allocated, throughput, deadlines, reproducibility.

Per queue and scenario:
- gpu_efficiency (every batch-like scenario): the mean utilisation, as a ratio 0..1, of the
  GPU-minutes with data while a job of the queue held the GPU (GR_ENGINE_ACTIVE when present, else
  GPU_UTIL / 100). Minutes without telemetry are left out, never counted as 0; `completeness` is the
  minutes with data / the allocated minutes the records expect;
- completed_per_gpu_hour and within_deadline (batch_inference): COMPLETED records that ended in
  the window per GPU-hour the queue held, and the share of them that ended within the deadline
  (`scenarios.batch_inference.deadline`, 24 h by default) of their submission;
- reproducible_share (fine_tuning): the share of records started in the window whose configured
  job fields (`reproducibility_fields`) carry every `reproducibility_keys` key as `key=value` with
  a non-empty value.
"""

from __future__ import annotations

import re
from typing import Any

import polars as pl

from gpusteward import evidence as ev
from gpusteward.capacity import held_gpus
from gpusteward.config.schema import Config
from gpusteward.domain import SUCCESS_STATES, Scenario
from gpusteward.objectives import deadline, reproducibility
from sla.common import (
    ended_in,
    result_row,
    results_frame,
    slo_for,
    started_in,
    window_of,
    with_overlap,
)
from sla.inputs import EvaluationInputs
from sla.minute_digest import minute_digest
from sla.queues import BATCH_LIKE, batch_like_jobs

_BATCH = Scenario.BATCH_INFERENCE.value
_FINE_TUNING = Scenario.FINE_TUNING.value


def has_keys(fields: tuple[str, ...], keys: tuple[str, ...]) -> pl.Expr:
    """True when the concatenated `fields` carry `key=<non-empty>` for every key."""
    text = pl.concat_str([pl.col(f).fill_null("") for f in fields], separator=" ")
    checks = [text.str.contains(rf"(^|[\s;,]){re.escape(k)}=[^\s;,]") for k in keys]
    return pl.all_horizontal(checks) if checks else pl.lit(True)


class OutcomeEvaluator:
    """Built-in evaluator; registered in `default_registry()` like any add-on."""

    @property
    def scenarios(self) -> frozenset[Scenario]:
        return BATCH_LIKE

    def evaluate(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        window = window_of(inputs)
        jobs = with_overlap(batch_like_jobs(inputs, config), window)
        rows = self._efficiency(inputs, config, jobs)
        rows += self._batch(inputs, config, jobs.filter(pl.col("scenario") == _BATCH))
        tuning = jobs.filter((pl.col("scenario") == _FINE_TUNING) & started_in(window))
        rows += self._reproducible(inputs, config, tuning)
        return results_frame(rows)

    def _row(self, inputs: EvaluationInputs, config: Config, s: dict[str, Any], indicator: str, value: float | None,
             *, n: int, completeness: float | None, evidence: list[ev.Part]) -> dict[str, Any]:
        slo = slo_for(config, s["scenario"], indicator)
        return result_row(
            inputs, scenario=s["scenario"], subject_kind="queue", subject=s["queue"], indicator=indicator,
            value=value, objective=slo.threshold if slo else None, slo=slo, rows=n, completeness=completeness,
            evidence=ev.encode(evidence),
        )

    def _efficiency(self, inputs: EvaluationInputs, config: Config, jobs: pl.DataFrame) -> list[dict[str, Any]]:
        held = jobs.filter(pl.col("held_s") > 0).with_columns(pl.col("job_id").cast(pl.Utf8))
        # A requeued job has several records; its latest names the queue its minutes count for.
        owner = held.sort("submit_time").group_by("cluster", "job_id").agg(pl.col("queue", "scenario").last())
        expected = held.group_by("queue", "scenario").agg(
            (pl.col("gpus_allocated").fill_null(0) * pl.col("held_s") / 60.0).sum().alias("expected")
        )
        per_job = minute_digest(inputs, config.idle).per_job().select(
            "cluster", "job_id", pl.col("util_sum").alias("u_sum"), pl.col("util_minutes").alias("n")
        ).filter(pl.col("n") > 0)
        stats = (
            per_job.join(owner, on=["cluster", "job_id"], how="inner")
            .group_by("queue", "scenario")
            .agg(pl.col("u_sum").sum(), pl.col("n").sum())
            .join(expected, on=["queue", "scenario"], how="full", coalesce=True)
            .sort("scenario", "queue")
        )
        rows: list[dict[str, Any]] = []
        for s in stats.iter_rows(named=True):
            n = int(s["n"] or 0)
            value = s["u_sum"] / n if n else None
            exp = float(s["expected"] or 0.0)
            rows.append(self._row(
                inputs, config, s, "gpu_efficiency", value, n=n, completeness=min(1.0, n / exp) if exp else None,
                evidence=[ev.part("mean_util", u=ev.ratio(value), n=n, m=round(exp))],
            ))
        return rows

    def _batch(self, inputs: EvaluationInputs, config: Config, jobs: pl.DataFrame) -> list[dict[str, Any]]:
        window = window_of(inputs)
        limit = deadline(config)
        done = ended_in(window) & pl.col("base_state").is_in(list(SUCCESS_STATES))
        turnaround = (pl.col("end_time") - pl.col("submit_time")).dt.total_microseconds() / 1e6
        stats = (
            jobs.group_by("queue", "scenario")
            .agg(
                (held_gpus() * pl.col("held_s") / 3600.0).sum().alias("gpu_hours"),
                done.sum().alias("completed"),
                (done & (turnaround <= limit.total_seconds())).sum().alias("in_time"),
                turnaround.filter(done).max().alias("slowest"),
            )
            .sort("scenario", "queue")
        )
        rows: list[dict[str, Any]] = []
        for s in stats.iter_rows(named=True):
            completed, hours = int(s["completed"]), float(s["gpu_hours"])
            rows.append(self._row(
                inputs, config, s, "completed_per_gpu_hour", completed / hours if hours > 0 else None, n=completed,
                completeness=1.0 if hours > 0 else None,
                evidence=[ev.part("completed_per_hour", n=completed, h=ev.gpu_hours(hours))],
            ))
            share = s["in_time"] / completed if completed else None
            rows.append(self._row(
                inputs, config, s, "within_deadline", share, n=completed, completeness=1.0 if completed else None,
                evidence=[ev.part("within_deadline", n=int(s["in_time"]), m=completed,
                                  d=ev.duration(limit.total_seconds())),
                          ev.part("slowest", t=ev.duration(s["slowest"]))],
            ))
        return rows

    def _reproducible(self, inputs: EvaluationInputs, config: Config, jobs: pl.DataFrame) -> list[dict[str, Any]]:
        fields, keys = reproducibility(config)
        stats = (
            jobs.with_columns(has_keys(fields, keys).alias("_ok"))
            .group_by("queue", "scenario")
            .agg(
                pl.len().alias("n"),
                pl.col("_ok").sum().alias("ok"),
                pl.col("job_id").filter(~pl.col("_ok")).sort().first().alias("example"),
            )
            .sort("scenario", "queue")
        )
        rows: list[dict[str, Any]] = []
        for s in stats.iter_rows(named=True):
            n, ok = int(s["n"]), int(s["ok"])
            evidence = [ev.part("carry_keys", n=ok, m=n, keys=ev.Names(tuple(keys)), fields=ev.Names(tuple(fields)))]
            if s["example"] is not None:
                evidence.append(ev.part("example_job_lacks", job=str(s["example"])))
            rows.append(self._row(inputs, config, s, "reproducible_share", ok / n if n else None, n=n,
                                  completeness=1.0 if n else None, evidence=evidence))
        return rows
