"""Interruptions of batch-like work: preemptions, the GPU-hours they put at risk, and recovery time.

Per queue and scenario, over the records that ended in the window:
- preemptions: records that ended PREEMPTED or REQUEUED;
- preemption_rate: preemptions / records that started in the window;
- preempted_gpu_hours: gpus_allocated x the part of the preempted run inside the window. The work
  lost is at most this: the records do not say when the job last checkpointed;
- recovery_time_p95: for every preempted or failed record, the time from its end to the start of
  the next run of the same work: the requeued record of the same job id, else the next record with
  the same cluster, user and job name, submitted at or after the setback and within 6 hours of it (a
  later one is new work, not a retry). Setbacks never run again are left out of the percentile and
  lower `completeness`.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import polars as pl

from gpusteward import evidence as ev
from gpusteward.capacity import held_gpus
from gpusteward.config.schema import Config
from gpusteward.domain import FAILURE_STATES, INTERRUPTED_STATES, Scenario
from sla.common import (
    Window,
    base_state,
    ended_in,
    events_within,
    result_row,
    results_frame,
    slo_for,
    started_in,
    window_of,
    with_overlap,
)
from sla.inputs import EvaluationInputs
from sla.queues import BATCH_LIKE, batch_like_jobs

_SETBACK = [*INTERRUPTED_STATES, *FAILURE_STATES]


RETRY_WITHIN = timedelta(hours=6)
"""A record submitted later than this after a setback is new work, not a retry of it."""


def _next_start(setbacks: pl.DataFrame, started: pl.DataFrame, by: list[str]) -> pl.Series:
    """For each setback, the start of the first other record sharing `by` submitted at or after its end
    (RETRY_WITHIN). The setback's own record never counts: a record submitted, started and ended in the
    same second (a job preempted with PreemptMode=CANCEL at once) would otherwise be its own recovery.

    Records of a group are numbered in submit order (`_k`); the first record submitted at or after the
    end is found with an as-of join, and when that is the setback itself, the one after it is taken:
    sorted joins only, so a group of many same-named records costs no pairwise product.
    """
    right = (
        started.select(*by, "submit_time", pl.col("start_time").alias("_next"), pl.col("job_id").alias("_job"))
        .drop_nulls(by)
        # Numbered in submit order within each group: a sort by time alone (`over` keeps the rows' order
        # inside a group), not by the group's strings first, which cost most of this function.
        .sort("submit_time", "_job")
        .with_columns(pl.int_range(pl.len()).over(by).alias("_k"))
    )
    firsts = right.group_by(*by, "submit_time").agg(pl.col("_k").min()).sort("submit_time")
    left = setbacks.select(
        *by, "end_time", pl.col("submit_time").alias("_own_submit"), pl.col("job_id").alias("_own_job"),
        pl.int_range(pl.len()).alias("_i"),
    ).sort("end_time")
    first = left.join_asof(
        firsts, left_on="end_time", right_on="submit_time", by=by, strategy="forward", check_sortedness=False,
    ).drop("submit_time")
    own = right.select(*by, pl.col("submit_time").alias("_own_submit"), pl.col("_job").alias("_own_job"),
                       pl.col("_k").alias("_own_k"))
    picked = first.join(own, on=[*by, "_own_submit", "_own_job"], how="left", nulls_equal=True).with_columns(
        pl.when(pl.col("_k") == pl.col("_own_k")).then(pl.col("_k") + 1).otherwise(pl.col("_k")).alias("_k")
    )
    found = picked.join(right.select(*by, "_k", "submit_time", "_next"), on=[*by, "_k"], how="left",
                        nulls_equal=True)
    within = pl.col("submit_time") <= pl.col("end_time") + RETRY_WITHIN
    return found.sort("_i").select(pl.when(within).then(pl.col("_next")).alias("_next"))["_next"]


def recoveries(jobs: pl.DataFrame, window: Window) -> pl.DataFrame:
    """The setbacks (preempted or failed records ended in the window) with `recovered_at` and `recovery_s`."""
    setbacks = jobs.filter(ended_in(window) & base_state().is_in(_SETBACK)).sort("end_time")
    started = jobs.filter(pl.col("start_time").is_not_null())
    same_job = _next_start(setbacks, started, ["cluster", "job_id"])
    same_name = _next_start(setbacks, started, ["cluster", "user", "name"])
    recovered = pl.coalesce(same_job, same_name).alias("recovered_at")
    return setbacks.with_columns(recovered).with_columns(
        ((pl.col("recovered_at") - pl.col("end_time")).dt.total_microseconds() / 1e6).alias("recovery_s")
    )


class InterruptionEvaluator:
    """Built-in evaluator; registered in `default_registry()` like any add-on."""

    @property
    def scenarios(self) -> frozenset[Scenario]:
        return BATCH_LIKE

    def evaluate(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        window = window_of(inputs)
        jobs = with_overlap(batch_like_jobs(inputs, config), window)
        preempted = jobs.filter(ended_in(window) & pl.col("base_state").is_in(list(INTERRUPTED_STATES)))
        started = jobs.filter(started_in(window)).group_by("queue", "scenario").len("started")
        pre = preempted.group_by("queue", "scenario").agg(
            pl.len().alias("preemptions"),
            (held_gpus() * pl.col("held_s") / 3600.0).sum().alias("gpu_hours"),
            pl.col("gpus_allocated").is_null().sum().alias("no_gpus"),
            pl.col("team").value_counts(sort=True, name="count").alias("teams"),
        )
        rec = recoveries(jobs, window).group_by("queue", "scenario").agg(
            pl.len().alias("setbacks"),
            pl.col("recovery_s").is_not_null().sum().alias("recovered"),
            pl.col("recovery_s").quantile(0.95, interpolation="linear").alias("p95"),
            pl.col("recovery_s").max().alias("max"),
            pl.col("recovery_s").drop_nulls().alias("recoveries"),
        )
        stats = (
            started.join(pre, on=["queue", "scenario"], how="full", coalesce=True)
            .join(rec, on=["queue", "scenario"], how="full", coalesce=True)
            .with_columns(pl.col("started", "preemptions", "setbacks", "recovered").fill_null(0))
            .sort("scenario", "queue")
        )
        rows: list[dict[str, Any]] = []
        for s in stats.iter_rows(named=True):
            rows += self._rows(inputs, config, s)
        return results_frame(rows)

    def _rows(self, inputs: EvaluationInputs, config: Config, s: dict[str, Any]) -> list[dict[str, Any]]:
        def row(
            indicator: str, value: float | None, n: int, completeness: float | None, *parts: ev.Part
        ) -> dict[str, Any]:
            slo = slo_for(config, s["scenario"], indicator)
            events = events_within(s["recoveries"], slo) if indicator == "recovery_time_p95" else None
            return result_row(
                inputs, scenario=s["scenario"], subject_kind="queue", subject=s["queue"], indicator=indicator,
                value=value, objective=slo.threshold if slo else None, slo=slo, rows=n, completeness=completeness,
                evidence=ev.encode(parts), events=events,
            )

        n_pre, started = int(s["preemptions"]), int(s["started"])
        teams = tuple(ev.part("team_count", team=str(t["team"]), n=int(t["count"])) for t in sorted(
            s["teams"] or [], key=lambda t: (-t["count"], str(t["team"]))
        ))
        ended = [ev.part("ended_preempted", n=n_pre)] + ([ev.part("by_team", list=teams)] if teams else [])
        hours = float(s["gpu_hours"] or 0.0)
        rows = [
            row("preemptions", float(n_pre), n_pre, 1.0, *ended),
            row(
                "preemption_rate", n_pre / started if started else None, started, 1.0 if started else None,
                ev.part("preempted_of", n=n_pre, m=started),
            ),
            row(
                "preempted_gpu_hours", hours, n_pre,
                (n_pre - int(s["no_gpus"] or 0)) / n_pre if n_pre else 1.0,
                ev.part("preempted_hours", n=ev.gpu_hours(hours)),
            ),
        ]
        setbacks, recovered = int(s["setbacks"]), int(s["recovered"])
        if setbacks:
            rows.append(row(
                "recovery_time_p95", s["p95"], recovered, recovered / setbacks,
                ev.part("ran_again", n=recovered, m=setbacks),
                ev.part("slowest_back", t=ev.duration(s["max"])),
            ))
        return rows
