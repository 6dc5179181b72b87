"""Preemption lines: the training preemption ratio over a rolling window, and online inference never
preempted or evicted for training.

- training_preemption: at each minute t, of the training records that ended in (t - window, t],
  the share that ended PREEMPTED. The ratio counts only once `min_records` ended in the window.
  Minutes above `max_ratio` (or `peak_max_ratio` inside the peak window) form episodes.
- inference_preemption: every online_inference record that ended PREEMPTED and whose gainer (the
  ledger's: the job that started on its nodes right after) is training. Preemptions of one cluster
  whose outages overlap form one episode, from the first preemption until the last preempted
  replica's job started again (or the end of the window).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import polars as pl

from gpusteward import evidence as ev
from gpusteward.config.protection import InferencePreemptionLine as InferencePreemptionConfig
from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from sla.common import base_state, classified_jobs, ended_in, window_of
from sla.inputs import EvaluationInputs
from sla.ledger import ledger
from sla.protection_common import (
    episode_row,
    episodes_frame,
    join_runs,
    merge_intervals,
    minute_runs,
    peak_window,
    threshold_expr,
)

TRAINING_PREEMPTION = "training_preemption"
INFERENCE_PREEMPTION = "inference_preemption"
_TRAINING = Scenario.TRAINING.value
_INFERENCE = Scenario.ONLINE_INFERENCE.value


class TrainingPreemptionLine:
    """Built-in line; registered in `default_lines()` like any add-on."""

    name = TRAINING_PREEMPTION

    def episodes(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        window = window_of(inputs)
        jobs = classified_jobs(inputs, config).filter((pl.col("scenario") == _TRAINING) & ended_in(window))
        jobs = jobs.with_columns((base_state() == "PREEMPTED").cast(pl.Int64).alias("_pre"))
        grid = pl.DataFrame({"ts": pl.datetime_range(window.start, window.end, "1m", closed="left", eager=True)})
        grid = grid.with_columns(pl.col("ts").cast(pl.Datetime("us")))
        rows: list[dict[str, Any]] = []
        for line in config.protection.training_preemption:
            mine = jobs.filter(pl.col("cluster") == line.cluster).with_columns(
                pl.col("end_time").dt.truncate("1m").alias("ts")
            )
            per_min = mine.group_by("ts").agg(pl.len().cast(pl.Int64).alias("ended"), pl.col("_pre").sum())
            lag = int(line.window.total_seconds() // 60)
            frame = (
                grid.join(per_min, on="ts", how="left")
                .sort("ts")
                .with_columns(pl.col("ended", "_pre").fill_null(0).cum_sum())
                .with_columns(
                    (pl.col("ended") - pl.col("ended").shift(lag).fill_null(0)).alias("n"),
                    (pl.col("_pre") - pl.col("_pre").shift(lag).fill_null(0)).alias("bad"),
                )
                .with_columns(
                    (pl.col("bad") / pl.col("n")).alias("ratio"),
                    threshold_expr(pl.col("ts"), line.max_ratio, peak_window(config, line.peak), line.peak_max_ratio)
                    .alias("limit"),
                )
                .filter((pl.col("n") >= line.min_records) & (pl.col("ratio") > pl.col("limit")))
                .select("ts", "ratio", "limit", "n", "bad")
            )
            for ep in join_runs(minute_runs(frame), [], for_=line.for_, keep_firing_for=line.keep_firing_for):
                worst = max(ep["ratio"])
                at = ep["ratio"].index(worst)
                evidence = ev.encode([ev.part(
                    "training_preempted", n=int(ep["bad"][at]), m=int(ep["n"][at]),
                    window=ev.duration(line.window.total_seconds()), at=ep["start"], p=ev.ratio(worst),
                    limit=ev.ratio(ep["limit"][at]),
                )])
                rows.append(episode_row(
                    TRAINING_PREEMPTION, line.cluster, ep["start"], ep["end"], worst=worst,
                    threshold=min(ep["limit"]), severity=line.severity, fallback=line.fallback, evidence=evidence,
                    breached=ep["breached"],
                ))
        return episodes_frame(rows)


class InferencePreemptionLine:
    """Built-in line: online inference is never preempted or evicted for training."""

    name = INFERENCE_PREEMPTION

    def episodes(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        lines = {line.cluster: line for line in config.protection.inference_preemption}
        if not lines:
            return episodes_frame([])
        window = window_of(inputs)
        led = ledger(inputs, config).filter(
            (pl.col("action") == "preemption") & (pl.col("scenario") == _INFERENCE)
            & (pl.col("gained_scenario") == _TRAINING) & pl.col("cluster").is_in(list(lines))
        )
        if led.height == 0:
            return episodes_frame([])
        jobs = classified_jobs(inputs, config).select("cluster", "job_id", "name", "start_time")
        back = (
            led.select("cluster", "job_id", "ts")
            .join(jobs, on=["cluster", "job_id"], how="left")
            .filter(pl.col("start_time") > pl.col("ts"))
            .group_by("cluster", "job_id", "ts")
            .agg(pl.col("start_time").min().alias("back"), pl.col("name").first())
        )
        names = jobs.group_by("cluster", "job_id").agg(pl.col("name").first().alias("_name"))
        intervals = (
            led.join(back, on=["cluster", "job_id", "ts"], how="left")
            .join(names, on=["cluster", "job_id"], how="left")
            .with_columns(
                pl.col("ts").alias("start"),
                pl.max_horizontal(pl.col("back").fill_null(pl.lit(window.end)), pl.col("ts") + pl.duration(minutes=1))
                .alias("end"),
            )
            .select("cluster", "start", "end", "ts", "job_id", "_name", "gained_job_id", "gained_team", "gpus")
        )
        rows: list[dict[str, Any]] = []
        for cluster, line in lines.items():
            runs = merge_intervals(intervals.filter(pl.col("cluster") == cluster), ["cluster"])
            rows.extend(self._rows(line, join_runs(runs, ["cluster"], for_=timedelta(0),
                                                   keep_firing_for=line.keep_firing_for)))
        return episodes_frame(rows)

    def _rows(self, line: InferencePreemptionConfig, episodes: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rows: list[dict[str, Any]] = []
        for ep in episodes:
            parts = [
                ev.part("preempted_by", job=str(j), name=str(n or "-"), gpus=ev.gpus(g), at=t, by=str(w),
                        team=str(team))
                for t, j, n, g, w, team in zip(
                    ep["ts"], ep["job_id"], ep["_name"], ep["gpus"], ep["gained_job_id"], ep["gained_team"],
                    strict=True,
                )
            ]
            rows.append(episode_row(
                INFERENCE_PREEMPTION, ep["cluster"], ep["start"], ep["end"], worst=float(len(parts)), threshold=0.0,
                severity=line.severity, fallback=line.fallback, evidence=ev.encode(parts), breached=ep["breached"],
            ))
        return rows
