"""Pool-level evaluators: inference headroom against the reserve line, and telemetry per host.

- reserve_headroom_gpus (online_inference, per cluster with an inference reserve line): the fewest
  GPUs available to online inference in any minute (as the protection line counts them, see
  sla.protection) minus the line's `min_gpus`. Below 0 the reserve was breached; the evidence names
  the episodes.
- telemetry_completeness (scenario `all`, per host): GPU-minutes with a row / GPU-minutes the
  inventory expects (each GPU from the later of the window start and its first sighting). A silent
  exporter shows here with the host's name.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from gpusteward.objectives import DEFAULT_TELEMETRY_COMPLETENESS
from gpusteward.tables import GPU_MINUTES, conform
from sla.common import ALL_SCENARIOS, MINUTE, classified_jobs, result_row, results_frame, slo_for, window_of
from sla.inputs import GPU_INVENTORY, EvaluationInputs
from sla.protection import cluster_gpus, held_per_minute, holders, inference_reserve_episodes

_INFERENCE = Scenario.ONLINE_INFERENCE.value


class ReserveEvaluator:
    """Built-in evaluator; registered in `default_registry()` like any add-on."""

    @property
    def scenarios(self) -> frozenset[Scenario]:
        return frozenset({Scenario.ONLINE_INFERENCE})

    def evaluate(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        window = window_of(inputs)
        jobs = classified_jobs(inputs, config)
        episodes = inference_reserve_episodes(inputs, config)
        slo = slo_for(config, _INFERENCE, "reserve_headroom_gpus")
        rows: list[dict[str, Any]] = []
        for line in config.protection.inference_reserve:
            total = cluster_gpus(inputs, config, line.cluster)
            if total <= 0 or window.minutes == 0:
                continue
            held = holders(jobs.filter(pl.col("cluster") == line.cluster), window)
            per_minute = held_per_minute(held, window).with_columns((total - pl.col("held")).alias("available"))
            worst = int(per_minute.select(pl.col("available").min()).item() or 0)
            mine = episodes.filter(pl.col("subject") == line.cluster)
            evidence = f"{total} GPUs; at least {worst} available to inference in every minute against a reserve of " \
                       f"{line.min_gpus}"
            if mine.height:
                spans = ", ".join(
                    f"{r['start']:%m-%d %H:%M}-{r['end']:%H:%M} UTC ({r['minutes']} min, {r['worst_value']:.0f} GPUs)"
                    for r in mine.head(3).iter_rows(named=True)
                )
                evidence += f"; breached in {mine.height} episodes: {spans}"
            rows.append(result_row(
                inputs, scenario=_INFERENCE, subject_kind="cluster", subject=line.cluster,
                indicator="reserve_headroom_gpus", value=float(worst - line.min_gpus),
                objective=slo.threshold if slo else None, rows=per_minute.height, completeness=1.0,
                evidence=evidence,
            ))
        return results_frame(rows)


class TelemetryEvaluator:
    """Built-in evaluator; registered in `default_registry()` like any add-on."""

    @property
    def scenarios(self) -> frozenset[Scenario]:
        return frozenset(Scenario)

    def evaluate(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        window = window_of(inputs)
        inv = conform(inputs.gpus, GPU_INVENTORY)
        if inv.height == 0 or window.minutes == 0:
            return results_frame([])
        start = pl.max_horizontal(pl.col("first_seen").fill_null(pl.lit(window.start)), pl.lit(window.start))
        expected = (
            inv.with_columns(((pl.lit(window.end) - start) / MINUTE).clip(lower_bound=0).cast(pl.Int64).alias("e"))
            .group_by("cluster", "host")
            .agg(pl.col("e").sum().alias("expected"), pl.len().alias("gpus"))
        )
        gm = conform(inputs.gpu_minutes, GPU_MINUTES).filter(
            pl.col("ts").is_between(window.start, window.end, closed="left")
        )
        # (cluster, host, gpu, ts) is the table's key: one row per GPU-minute.
        present = gm.group_by("cluster", "host").agg(pl.len().alias("present"))
        gaps = self._silences(gm.select("cluster", "host", "ts").unique())
        stats = expected.join(present, on=["cluster", "host"], how="left").join(
            gaps, on=["cluster", "host"], how="left"
        ).sort("cluster", "host")
        objective = _objective(config)
        rows: list[dict[str, Any]] = []
        for s in stats.iter_rows(named=True):
            exp, got = int(s["expected"]), int(s["present"] or 0)
            evidence = f"{got:,} of {exp:,} GPU-minutes of {s['gpus']} GPUs reported"
            if s["gap_minutes"]:
                evidence += (f"; longest silence of the whole host {s['gap_start']:%m-%d %H:%M}-"
                             f"{s['gap_end']:%m-%d %H:%M} UTC ({s['gap_minutes']} min)")
            rows.append(result_row(
                inputs, scenario=ALL_SCENARIOS, subject_kind="host", subject=f"{s['host']}",
                indicator="telemetry_completeness", value=got / exp if exp else None, objective=objective,
                rows=got, completeness=None, evidence=evidence,
            ))
        return results_frame(rows)

    @staticmethod
    def _silences(minutes: pl.DataFrame) -> pl.DataFrame:
        """Longest run of minutes in which no GPU of a host reported, per host (inside the data)."""
        runs = minutes.sort("cluster", "host", "ts").with_columns(
            pl.col("ts").shift(1).over("cluster", "host").alias("prev")
        ).filter((pl.col("ts") - pl.col("prev")) > pl.lit(MINUTE))
        runs = runs.with_columns(
            (pl.col("prev") + pl.duration(minutes=1)).alias("gap_start"), pl.col("ts").alias("gap_end"),
            (((pl.col("ts") - pl.col("prev")) / MINUTE).cast(pl.Int64) - 1).alias("gap_minutes"),
        )
        return (
            runs.sort(["gap_minutes", "gap_start"], descending=[True, False])
            .group_by("cluster", "host", maintain_order=True)
            .first()
            .select("cluster", "host", "gap_start", "gap_end", "gap_minutes")
        )


def _objective(config: Config) -> float:
    """The first telemetry_completeness objective configured in any scenario, else the default."""
    for scenario in Scenario:
        sc = config.scenarios.get(scenario)
        for slo in sc.slos if sc else []:
            if slo.indicator == "telemetry_completeness":
                return slo.threshold
    return DEFAULT_TELEMETRY_COMPLETENESS

