"""Interactive evaluator, per team: time to get a GPU (p95 of start - submit), idle GPU-hours, and
sessions not reclaimed.

A session is not reclaimed when it held its GPUs past a limit: one idle run (sla.idle) longer than
the idle limit, or a hold longer than the lifecycle limit (`scenarios.interactive.idle_limit`,
`lifecycle_limit`; 2 h and 12 h by default). Only sessions that held GPUs in the window count.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from gpusteward import evidence as ev
from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from gpusteward.objectives import interactive_limits
from sla.common import (
    classified_jobs,
    events_within,
    result_row,
    results_frame,
    slo_for,
    started_in,
    window_of,
    with_overlap,
)
from sla.idle import idle_by_job
from sla.inputs import EvaluationInputs
from sla.minute_digest import minute_digest

_SCENARIO = Scenario.INTERACTIVE.value


class InteractiveEvaluator:
    """Built-in evaluator; registered in `default_registry()` like any add-on."""

    @property
    def scenarios(self) -> frozenset[Scenario]:
        return frozenset({Scenario.INTERACTIVE})

    def evaluate(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        rows = self._time_to_gpu(inputs, config) + self._idle(inputs, config) + self._not_reclaimed(inputs, config)
        return results_frame(rows)

    def _not_reclaimed(self, inputs: EvaluationInputs, config: Config) -> list[dict[str, Any]]:
        window = window_of(inputs)
        idle_limit, lifecycle = interactive_limits(config)
        jobs = with_overlap(classified_jobs(inputs, config).filter(pl.col("scenario") == _SCENARIO), window)
        jobs = jobs.filter(pl.col("held_s") > 0).with_columns(
            pl.col("job_id").cast(pl.Utf8),
            ((pl.min_horizontal(pl.col("end_time").fill_null(pl.lit(window.end)), pl.lit(window.end))
              - pl.col("start_time")).dt.total_microseconds() / 1e6).alias("hold_s"),
        )
        runs = minute_digest(inputs, config.idle).idle_runs.join(
            jobs.select("cluster", "job_id").unique(), on=["cluster", "job_id"], how="semi"
        ).group_by("cluster", "job_id").agg(pl.col("minutes").max().alias("idle_max"))
        sessions = jobs.join(runs, on=["cluster", "job_id"], how="left").with_columns(
            (pl.col("idle_max").fill_null(0) * 60 > idle_limit.total_seconds()).alias("_idle"),
            (pl.col("hold_s") > lifecycle.total_seconds()).alias("_life"),
        )
        stats = sessions.group_by("team").agg(
            pl.len().alias("n"),
            (pl.col("_idle") | pl.col("_life")).sum().alias("bad"),
            pl.col("_idle").sum().alias("idle"),
            pl.col("_life").sum().alias("life"),
            pl.col("job_id").filter(pl.col("_idle") | pl.col("_life")).sort().first().alias("example"),
        ).sort("team")
        slo = slo_for(config, _SCENARIO, "sessions_not_reclaimed")
        rows: list[dict[str, Any]] = []
        for s in stats.iter_rows(named=True):
            parts = [ev.part("sessions_past", n=int(s["bad"]), m=int(s["n"]), a=int(s["idle"]),
                             x=ev.duration(idle_limit.total_seconds()), b=int(s["life"]),
                             y=ev.duration(lifecycle.total_seconds()))]
            if s["example"] is not None:
                parts.append(ev.part("example_job", job=str(s["example"])))
            rows.append(result_row(
                inputs, scenario=_SCENARIO, subject_kind="team", subject=s["team"], indicator="sessions_not_reclaimed",
                value=float(s["bad"]), objective=slo.threshold if slo else None, slo=slo, rows=int(s["n"]),
                completeness=1.0,
                evidence=ev.encode(parts),
            ))
        return rows

    def _time_to_gpu(self, inputs: EvaluationInputs, config: Config) -> list[dict[str, Any]]:
        window = window_of(inputs)
        jobs = classified_jobs(inputs, config).filter((pl.col("scenario") == _SCENARIO) & started_in(window))
        wait = ((pl.col("start_time") - pl.col("submit_time")).dt.total_microseconds() / 1e6).clip(lower_bound=0.0)
        stats = (
            jobs.with_columns(wait.alias("wait_s"))
            .group_by("team")
            .agg(
                pl.len().alias("n"),
                pl.col("wait_s").is_not_null().sum().alias("known"),
                pl.col("wait_s").quantile(0.95, interpolation="linear").alias("p95"),
                pl.col("wait_s").max().alias("max"),
                pl.col("wait_s").drop_nulls().alias("waits"),
            )
            .sort("team")
        )
        slo = slo_for(config, _SCENARIO, "time_to_gpu_p95")
        return [
            result_row(
                inputs, scenario=_SCENARIO, subject_kind="team", subject=s["team"], indicator="time_to_gpu_p95",
                value=s["p95"], objective=slo.threshold if slo else None, slo=slo, rows=int(s["known"]),
                events=events_within(s["waits"], slo),
                completeness=s["known"] / s["n"] if s["n"] else None,
                evidence=ev.encode([ev.part("sessions", n=int(s["known"])),
                                    ev.part("longest_wait", wait=ev.duration(s["max"]))]),
            )
            for s in stats.iter_rows(named=True)
        ]

    def _idle(self, inputs: EvaluationInputs, config: Config) -> list[dict[str, Any]]:
        idle = idle_by_job(inputs, config, scenarios=[_SCENARIO])
        stats = (
            idle.group_by("team")
            .agg(
                pl.len().alias("jobs"),
                pl.col("gpu_minutes").sum(),
                pl.col("idle_minutes").sum(),
                pl.col("idle_held_minutes").sum(),
                pl.col("no_data_minutes").sum(),
                pl.col("util_source").drop_nulls().unique().sort().str.join(", ").alias("sources"),
                # The session that wasted the most names itself.
                pl.col("job_id").sort_by(pl.col("idle_minutes") + pl.col("idle_held_minutes"), "job_id",
                                         descending=[True, False]).first().alias("worst_job"),
                (pl.col("idle_minutes") + pl.col("idle_held_minutes")).max().alias("worst_minutes"),
            )
            .sort("team")
        )
        slo = slo_for(config, _SCENARIO, "idle_gpu_hours")
        rows: list[dict[str, Any]] = []
        for s in stats.iter_rows(named=True):
            expected = s["gpu_minutes"] + s["no_data_minutes"]
            idle_minutes = s["idle_minutes"] + s["idle_held_minutes"]
            parts = [
                ev.part("idle_hours", n=ev.gpu_hours(idle_minutes / 60), s=int(s["jobs"]),
                        h=ev.gpu_hours(s["idle_held_minutes"] / 60)),
                ev.part("util_from", metric=s["sources"]) if s["sources"] else ev.part("util_no_data"),
                ev.part("no_telemetry", n=ev.gpu_hours(s["no_data_minutes"] / 60)),
            ]
            if s["worst_minutes"]:
                parts.append(ev.part("most_idle", job=str(s["worst_job"]), h=ev.gpu_hours(s["worst_minutes"] / 60)))
            rows.append(result_row(
                inputs, scenario=_SCENARIO, subject_kind="team", subject=s["team"], indicator="idle_gpu_hours",
                value=idle_minutes / 60.0 if s["gpu_minutes"] else None, slo=slo,
                objective=slo.threshold if slo else None,
                rows=int(s["gpu_minutes"]), completeness=s["gpu_minutes"] / expected if expected else None,
                evidence=ev.encode(parts),
            ))
        return rows
