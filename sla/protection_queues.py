"""Waiting and holding lines: maximum queue wait per queue, and interactive idle and lifecycle limits.

- queue_wait: a job breaches from the moment its wait (from eligible, else submit) crosses the limit
  until it starts, until it ends without starting (cancelled while pending), or until the end of the
  window while it still waits. The breaches of one queue
  ("cluster/partition") that overlap or touch form one run: the queue was starving throughout. Runs
  less than the line's `keep_firing_for` apart join one episode (default a week): a queue that lets
  its jobs through for a while and starves them again has not recovered. A job that became eligible inside the peak
  window gets `peak_max_wait` instead.
- interactive_limits: a session breaches from the end of its idle limit (an idle run longer than
  `idle_limit`) until the run ends, and from `lifecycle_limit` after its start until it ends. The
  breaches of one team's sessions that overlap or touch form one run per team; runs less than
  `keep_firing_for` apart join one episode (default a week: the habit pauses over weekends, not for good).
"""

from __future__ import annotations

import fnmatch
from typing import Any

import polars as pl

from gpusteward import evidence as ev
from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from gpusteward.objectives import interactive_limits
from sla.common import classified_jobs, job_label, window_of
from sla.inputs import EvaluationInputs
from sla.minute_digest import minute_digest
from sla.protection_common import (
    episode_row,
    episodes_frame,
    join_runs,
    merge_intervals,
    peak_window,
    threshold_expr,
)

QUEUE_WAIT = "queue_wait"
INTERACTIVE_LIMITS = "interactive_limits"
_INTERACTIVE = Scenario.INTERACTIVE.value
_MAX_NAMED = 3


class QueueWaitLine:
    """Built-in line; registered in `default_lines()` like any add-on."""

    name = QUEUE_WAIT

    def episodes(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        if not config.protection.queue_wait:
            return episodes_frame([])
        window = window_of(inputs)
        jobs = classified_jobs(inputs, config).with_columns(
            pl.format("{}/{}", "cluster", "partition").alias("queue"),
            pl.coalesce("eligible_time", "submit_time").alias("_ready"),
        ).filter(pl.col("_ready").is_not_null())
        rows: list[dict[str, Any]] = []
        claimed: set[str] = set()
        for line in config.protection.queue_wait:
            queues = [q for q in jobs["queue"].unique().sort().to_list()
                      if fnmatch.fnmatchcase(q, line.queue) and q not in claimed]
            claimed.update(queues)  # first line that names a queue wins, so a queue alerts once
            peak = peak_window(config, line.peak)
            peak_s = None if line.peak_max_wait is None else line.peak_max_wait.total_seconds()
            limit_s = threshold_expr(pl.col("_ready"), line.max_wait.total_seconds(), peak, peak_s)
            waited = (
                jobs.filter(pl.col("queue").is_in(queues))
                .with_columns(limit_s.alias("limit_s"))
                .with_columns(
                    (pl.col("_ready") + pl.duration(microseconds=(pl.col("limit_s") * 1e6).cast(pl.Int64)))
                    .alias("start"),
                    # A job waits until it starts, or until it ends without starting (cancelled while
                    # pending, rejected): only a job with neither is still waiting at the window's end.
                    pl.min_horizontal(pl.coalesce("start_time", "end_time", pl.lit(window.end)), pl.lit(window.end))
                    .alias("end"),
                )
                .with_columns(pl.max_horizontal("start", pl.lit(window.start)).alias("start"))
                .filter(pl.col("end") > pl.col("start"))
                .with_columns(((pl.col("end") - pl.col("_ready")).dt.total_seconds()).alias("wait_s"))
                .select("queue", "start", "end", "job_id", job_label().alias("job"), "wait_s", "limit_s")
            )
            runs = merge_intervals(waited, ["queue"])
            for ep in join_runs(runs, ["queue"], for_=line.for_, keep_firing_for=line.keep_firing_for):
                order = sorted(range(len(ep["job_id"])), key=lambda i: (-ep["wait_s"][i], ep["job_id"][i]))
                named = tuple(
                    ev.part("job_waited", job=str(ep["job"][i]), wait=ev.duration(ep["wait_s"][i]))
                    for i in order[:_MAX_NAMED]
                )
                evidence = ev.encode([ev.part("jobs_waited", n=len(order), t=ev.duration(min(ep["limit_s"])),
                                              list=named)])
                rows.append(episode_row(
                    QUEUE_WAIT, ep["queue"], ep["start"], ep["end"], worst=max(ep["wait_s"]),
                    threshold=min(ep["limit_s"]), severity=line.severity, fallback=line.fallback, evidence=evidence,
                    breached=ep["breached"],
                ))
        return episodes_frame(rows)


class InteractiveLimitsLine:
    """Built-in line: interactive sessions reclaimed at their idle and lifecycle limits."""

    name = INTERACTIVE_LIMITS

    def episodes(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        if not config.protection.interactive_limits:
            return episodes_frame([])
        window = window_of(inputs)
        sessions = classified_jobs(inputs, config).filter(
            (pl.col("scenario") == _INTERACTIVE) & pl.col("start_time").is_not_null()
            & (pl.col("start_time") < window.end)
        ).with_columns(
            pl.col("job_id").cast(pl.Utf8).alias("_id"),
            pl.min_horizontal(pl.col("end_time").fill_null(pl.lit(window.end)), pl.lit(window.end)).alias("_end"),
        ).filter(pl.col("_end") > window.start)
        runs = minute_digest(inputs, config.idle).idle_runs.join(
            sessions.select("cluster", pl.col("_id").alias("job_id")).unique(), on=["cluster", "job_id"], how="semi"
        ).group_by("cluster", "job_id", "start").agg(pl.col("minutes").max())
        default_idle, default_life = interactive_limits(config)
        rows: list[dict[str, Any]] = []
        for line in config.protection.interactive_limits:
            idle_limit = line.idle_limit or default_idle
            life = line.lifecycle_limit or default_life
            clusters = [c for c in sessions["cluster"].unique().to_list() if fnmatch.fnmatchcase(c, line.cluster)]
            mine = sessions.filter(pl.col("cluster").is_in(clusters))
            idle = runs.join(mine.select("cluster", pl.col("_id").alias("job_id"), "team", pl.col("job_id")
                                         .alias("_job")), on=["cluster", "job_id"], how="inner").with_columns(
                (pl.col("start") + pl.duration(seconds=idle_limit.total_seconds())).alias("_from"),
                (pl.col("start") + pl.duration(minutes=pl.col("minutes"))).alias("_to"),
                pl.lit("idle").alias("_why"),
            ).select("team", pl.col("_from").alias("start"), pl.col("_to").alias("end"), "_job", "_why")
            long = mine.select(
                "team", (pl.col("start_time") + pl.duration(seconds=life.total_seconds())).alias("start"),
                pl.col("_end").alias("end"), pl.col("job_id").alias("_job"), pl.lit("lifecycle").alias("_why"),
            )
            breaches = pl.concat([idle, long]).filter(pl.col("end") > pl.col("start")).with_columns(
                pl.max_horizontal("start", pl.lit(window.start)).alias("start")
            ).filter(pl.col("end") > pl.col("start"))
            runs = merge_intervals(breaches, ["team"])
            for ep in join_runs(runs, ["team"], for_=line.for_, keep_firing_for=line.keep_firing_for):
                jobs = sorted(set(ep["_job"]))
                n_idle = len({j for j, w in zip(ep["_job"], ep["_why"], strict=True) if w == "idle"})
                parts = [ev.part(
                    "not_reclaimed", n=len(jobs), a=n_idle, x=ev.duration(idle_limit.total_seconds()),
                    b=len(jobs) - n_idle, y=ev.duration(life.total_seconds()), start=ep["start"],
                    jobs=ev.Names(tuple(str(j) for j in jobs[:_MAX_NAMED])),
                )]
                if len(jobs) > _MAX_NAMED:
                    parts.append(ev.part("more_jobs", n=len(jobs) - _MAX_NAMED))
                evidence = ev.encode(parts)
                rows.append(episode_row(
                    INTERACTIVE_LIMITS, ep["team"] or "unattributed", ep["start"], ep["end"], worst=float(len(jobs)),
                    threshold=0.0, severity=line.severity, fallback=line.fallback, evidence=evidence,
                    breached=ep["breached"],
                ))
        return episodes_frame(rows)

