"""Protection lines checked against what happened: the ProtectionLine Protocol, its registry, and the
inference reserve line (the other built-in lines live in sla/protection_*.py).

Inference reserve: per cluster and minute, the GPUs available to online inference are the
cluster's GPUs (config `clusters.gpus`, else the GPUs the inventory has seen there) minus the GPUs
held by jobs of every other scenario. A job holds its GPUs in every minute its [start, end)
touches (a running job until the end of the data): partial minutes count, because for that
minute inference could not have had them. Consecutive minutes below `min_gpus` (`peak_min_gpus`
inside the line's peak window) form an episode;
episodes shorter than the line's `for` are dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any, Protocol

import polars as pl

from gpusteward import evidence as ev
from gpusteward.capacity import cards_per_cluster, held_gpus
from gpusteward.config.schema import Config, InferenceReserveLine
from gpusteward.domain import INTERRUPTED_STATES, Scenario
from gpusteward.tables import conform
from sla.common import Window, base_state, classified_jobs, window_of
from sla.inputs import EvaluationInputs
from sla.protection_burn import BurnRateLine
from sla.protection_common import episode_row, episodes_frame, join_runs, minute_runs, peak_window, threshold_expr
from sla.protection_preemption import InferencePreemptionLine, TrainingPreemptionLine
from sla.protection_queues import InteractiveLimitsLine, QueueWaitLine
from sla.results import BREACH_EPISODES

INFERENCE_RESERVE = "inference_reserve"
_INFERENCE = Scenario.ONLINE_INFERENCE.value
_MAX_NAMED_JOBS = 5


def cluster_gpus(inputs: EvaluationInputs, config: Config, cluster: str) -> int:
    """GPUs in a cluster: the configured count, else the distinct cards the inventory has seen."""
    configured = next((c.gpus for c in config.clusters if c.name == cluster), 0)
    if configured > 0:
        return configured
    inv = inputs.gpus
    if inv.height == 0:
        return 0
    return cards_per_cluster(inv.filter(pl.col("cluster") == cluster)).get(cluster, 0)


def holders(jobs: pl.DataFrame, window: Window) -> pl.DataFrame:
    """Non-inference GPU jobs with the minutes [first, last) they touch inside the window."""
    first = pl.max_horizontal(pl.col("start_time"), pl.lit(window.start)).dt.truncate("1m")
    end = pl.min_horizontal(pl.col("end_time").fill_null(pl.lit(window.end)), pl.lit(window.end))
    # Round the end up to the next minute boundary: the partly held minute counts as held.
    last = (end - pl.duration(microseconds=1)).dt.truncate("1m") + pl.duration(minutes=1)
    return (
        jobs.filter(
            (pl.col("scenario") != _INFERENCE)
            & pl.col("start_time").is_not_null()
            & (pl.col("gpus_allocated").fill_null(0) > 0)
        )
        .with_columns(first.alias("first"), last.alias("last"))
        .filter(pl.col("last") > pl.col("first"))
    )


def held_per_minute(held: pl.DataFrame, window: Window) -> pl.DataFrame:
    """`ts`, `held`: GPUs held by the `held` jobs (from `holders`) in every minute of the window (a sweep)."""
    grid = pl.DataFrame({"ts": pl.datetime_range(window.start, window.end, "1m", closed="left", eager=True)})
    grid = grid.with_columns(pl.col("ts").cast(pl.Datetime("us")))
    if grid.height == 0:
        return grid.with_columns(pl.lit(0, dtype=pl.Int64).alias("held"))
    # Whole-GPU equivalents (a MIG slice holds its share); whole counts stay integers.
    fractional = "gpu_equivalents" in held.columns and held["gpu_equivalents"].is_not_null().any()
    gpus = held_gpus() if fractional else pl.col("gpus_allocated").cast(pl.Int64)
    events = pl.concat([
        held.select(pl.col("first").alias("ts"), gpus.alias("delta")),
        held.select(pl.col("last").alias("ts"), (-gpus).alias("delta")),
    ]).group_by("ts").agg(pl.col("delta").sum())
    return (
        grid.join(events, on="ts", how="left")
        .sort("ts")
        .select("ts", pl.col("delta").fill_null(0).cum_sum().alias("held"))
    )


def _episodes(per_minute: pl.DataFrame, line: InferenceReserveLine) -> list[dict[str, Any]]:
    """Runs of consecutive minutes below the reserve, joined into episodes by the line's `for` and
    `keep_firing_for`; each carries the minutes' `available` and `limit` as lists."""
    breach = per_minute.filter(pl.col("available") < pl.col("limit")).select("ts", "available", "limit")
    return join_runs(minute_runs(breach), [], for_=line.for_, keep_firing_for=line.keep_firing_for)


def _evidence(held: pl.DataFrame, jobs: pl.DataFrame, start: datetime, end: datetime, total: int) -> str:
    """Which jobs held the GPUs during the episode, biggest first, and which inference work was preempted."""
    inside = held.filter((pl.col("first") < end) & (pl.col("last") > start)).with_columns(
        (
            (pl.min_horizontal("last", pl.lit(end)) - pl.max_horizontal("first", pl.lit(start))).dt.total_minutes()
            * held_gpus()
        ).alias("_gpu_min")
    ).sort(["_gpu_min", "job_id"], descending=[True, False])
    named = tuple(
        ev.part("holder", scenario=ev.Word("scenario", str(r["scenario"])), job=str(r["job_id"]), team=str(r["team"]),
                gpus=ev.gpus(r["gpus_allocated"]), start=r["first"])
        for r in inside.head(_MAX_NAMED_JOBS).iter_rows(named=True)
    )
    parts = [ev.part("gpus_in_cluster", n=ev.gpus(total)),
             ev.part("held_by_other", list=named) if named else ev.part("held_by_none")]
    if inside.height > _MAX_NAMED_JOBS:
        parts.append(ev.part("more_jobs", n=inside.height - _MAX_NAMED_JOBS))
    preempted = jobs.filter(
        (pl.col("scenario") == _INFERENCE)
        & base_state().is_in(list(INTERRUPTED_STATES))
        & pl.col("end_time").is_between(start, end, closed="left")
    ).sort("end_time", "job_id")
    if preempted.height:
        parts.append(ev.part("inference_preempted", list=tuple(
            ev.part("job_at", job=str(r["job_id"]), at=r["end_time"]) for r in preempted.iter_rows(named=True)
        )))
    return ev.encode(parts)


def inference_reserve_episodes(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """BREACH_EPISODES of every configured inference reserve line."""
    window = window_of(inputs)
    jobs = classified_jobs(inputs, config)
    rows: list[dict[str, Any]] = []
    for line in config.protection.inference_reserve:
        total = cluster_gpus(inputs, config, line.cluster)
        if total <= 0:
            # Without a GPU count the line cannot be checked; docs/evaluation.md says so.
            continue
        mine = jobs.filter(pl.col("cluster") == line.cluster)
        held = holders(mine, window)
        limit = threshold_expr(pl.col("ts"), line.min_gpus, peak_window(config, line.peak), line.peak_min_gpus)
        per_minute = held_per_minute(held, window).with_columns(
            (total - pl.col("held")).alias("available"), limit.alias("limit")
        )
        for ep in _episodes(per_minute, line):
            rows.append(episode_row(
                INFERENCE_RESERVE, line.cluster, ep["start"], ep["end"], worst=float(min(ep["available"])),
                threshold=float(max(ep["limit"])), severity=line.severity, fallback=line.fallback,
                evidence=_evidence(held, mine, ep["start"], ep["end"], total), breached=ep["breached"],
            ))
    return episodes_frame(rows)


class ProtectionLine(Protocol):
    """One kind of protection line: BREACH_EPISODES rows from one month's frames. Pure."""

    @property
    def name(self) -> str:
        """The line kind, the `line` column of its episodes."""
        ...

    def episodes(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        """Rows in the BREACH_EPISODES schema, with evidence and the line's fallback."""
        ...


class InferenceReserve:
    """Built-in line; registered in `default_lines()` like any add-on."""

    name = INFERENCE_RESERVE

    def episodes(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        return inference_reserve_episodes(inputs, config)


class ProtectionRegistry:
    """Named protection lines, run in registration order."""

    def __init__(self) -> None:
        self._lines: dict[str, ProtectionLine] = {}

    def register(self, line: ProtectionLine) -> None:
        if line.name in self._lines:
            raise ValueError(f"a protection line named {line.name!r} is already registered")
        self._lines[line.name] = line

    def names(self) -> list[str]:
        return list(self._lines)

    def __iter__(self) -> Iterator[ProtectionLine]:
        return iter(list(self._lines.values()))


def default_lines() -> ProtectionRegistry:
    """A fresh registry holding the built-in lines; importing this module registers nothing."""
    registry = ProtectionRegistry()
    for line in (
        InferenceReserve(), InferencePreemptionLine(), TrainingPreemptionLine(), QueueWaitLine(),
        InteractiveLimitsLine(), BurnRateLine(),
    ):
        registry.register(line)
    return registry


def protection_episodes(
    inputs: EvaluationInputs, config: Config, *, registry: ProtectionRegistry | None = None
) -> pl.DataFrame:
    """BREACH_EPISODES of every registered protection line, in a fixed order."""
    lines = registry if registry is not None else default_lines()
    frames = [conform(line.episodes(inputs, config), BREACH_EPISODES) for line in lines]
    if not frames:
        return pl.DataFrame(schema=BREACH_EPISODES)
    return pl.concat(frames).sort("line", "subject", "start", maintain_order=True)
