"""Protected objectives under a plan (pure): what the replay says a plan does to work no quota change may hurt.

A quota plan moves GPUs between teams; the work the pool protects must not pay for it unnoticed. Each
objective is compared between the replay under the current limits and the replay under the plan (the
model's bias is in both, so the difference is the plan's):
- inference_reserve: per `protection.inference_reserve` line, the time the GPUs left to online inference
  (the cluster's GPUs minus those every other scenario holds, as sla.protection counts them) fall below
  the line's `min_gpus`. Worse: longer by more than a minute.
- queue_wait: per `protection.queue_wait` line, the records of its queues whose replayed wait passes the
  line's `max_wait`. Worse: more of them.
- scenario_wait: per cluster and `quota.protected_scenarios` scenario (online inference and interactive
  sessions by default: a notebook's time to get a GPU), the replayed wait p95 of its records. Worse:
  longer by more than max(a minute, `quota.min_gain` of itself).
A plan with any of them worse is flagged: it is approved only with an override whose reason the audit
keeps (warehouse.control). The replay knows one pool of GPUs per cluster, not the nodes a partition owns,
and no peak window (`peak_min_gpus`, `peak_max_wait` are not replayed): docs/quota.md says so.
"""

from __future__ import annotations

from collections.abc import Mapping
from fnmatch import fnmatchcase
from typing import Any

import numpy as np
import polars as pl

from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from quota.analysis import MonthAnalysis
from reports.model import Message, Quantity, Text
from reports.plan_text import encode

MIN_WORSE_S = 60.0
"""A replayed time below the reserve, or a wait p95, must grow by more than a minute to count as worse."""

_INFERENCE = Scenario.ONLINE_INFERENCE.value


def _with_waits(segments: pl.DataFrame, length_s: float) -> pl.DataFrame:
    """Replayed segments (MonthAnalysis.segments) with their wait (those queued inside the window,
    censored at its end) and their held span inside the window."""
    begin = pl.col("start_s").fill_null(np.inf).fill_nan(np.inf)
    end = pl.col("end_s").fill_null(np.inf).fill_nan(np.inf)
    return segments.with_columns(
        pl.when(pl.col("submit_s") >= 0)
        .then((pl.min_horizontal(begin, pl.lit(length_s)) - pl.col("submit_s")).clip(lower_bound=0.0))
        .otherwise(None).alias("_wait"),
        pl.max_horizontal(begin, pl.lit(0.0)).clip(upper_bound=length_s).alias("_from"),
        pl.min_horizontal(end, pl.lit(length_s)).clip(lower_bound=0.0).alias("_to"),
    )


def below_reserve_s(jobs: pl.DataFrame, cluster: str, gpus: int, min_gpus: int, length_s: float) -> float:
    """Seconds of the window in which the cluster's GPUs less those held by work other than online
    inference were fewer than `min_gpus` (jobs: `_with_waits` rows)."""
    held = jobs.filter((pl.col("cluster") == cluster) & (pl.col("scenario").fill_null("") != _INFERENCE)
                       & (pl.col("_to") > pl.col("_from")))
    times = np.concatenate([[0.0], held["_from"].to_numpy(), held["_to"].to_numpy()])
    sizes = held["gpus"].to_numpy().astype(float)
    deltas = np.concatenate([[0.0], sizes, -sizes])
    order = np.argsort(times, kind="stable")
    at = times[order]
    running = np.cumsum(deltas[order])
    widths = np.diff(np.append(at, length_s)).clip(min=0.0)
    return float(widths[(gpus - running) < min_gpus].sum())


def _p95(values: pl.Series) -> float | None:
    kept = values.drop_nulls()
    return None if kept.is_empty() else float(kept.quantile(0.95, interpolation="linear") or 0.0)


def _flag(objective: str, cluster: str, subject: str, *, current: float, planned: float, threshold: float | None,
          message: Message, summary: str) -> dict[str, Any]:
    return {"objective": objective, "cluster": cluster, "subject": subject, "current": current, "plan": planned,
            "threshold": threshold, "message": encode([message]), "summary": summary}


def _m(key: str, **params: str | Quantity) -> Message:
    return Message(key, tuple((k, Text(v) if isinstance(v, str) else v) for k, v in params.items()))


def _reserve_flags(config: Config, analysis: MonthAnalysis, now: pl.DataFrame, plan: pl.DataFrame
                   ) -> list[dict[str, Any]]:
    flags = []
    for line in config.protection.inference_reserve:
        gpus = analysis.gpus.get(line.cluster)
        if gpus is None:
            continue
        before = below_reserve_s(now, line.cluster, gpus, line.min_gpus, analysis.length_s)
        after = below_reserve_s(plan, line.cluster, gpus, line.min_gpus, analysis.length_s)
        if after > before + MIN_WORSE_S:
            message = _m("quota.protected.inference_reserve", cluster=line.cluster,
                         threshold=Quantity(line.min_gpus, "gpus"), current=Quantity(before, "duration"),
                         plan=Quantity(after, "duration"))
            summary = (f"inference reserve on {line.cluster}: below {line.min_gpus} GPUs for {after / 3600:.1f} h "
                       f"instead of {before / 3600:.1f} h")
            flags.append(_flag("inference_reserve", line.cluster, line.cluster, current=before, planned=after,
                               threshold=float(line.min_gpus), message=message, summary=summary))
    return flags


def _queue_flags(config: Config, now: pl.DataFrame, plan: pl.DataFrame) -> list[dict[str, Any]]:
    flags = []
    queues = sorted(set(now["queue"].drop_nulls().to_list()))
    for line in config.protection.queue_wait:
        mine = [q for q in queues if fnmatchcase(q, line.queue)]
        if not mine:
            continue
        limit = line.max_wait.total_seconds()

        def past(frame: pl.DataFrame, queues: list[str] = mine, limit: float = limit) -> int:
            return int(frame.filter(pl.col("queue").is_in(queues) & (pl.col("_wait") > limit)).height)

        before, after = past(now), past(plan)
        if after > before:
            cluster = mine[0].split("/", 1)[0]
            message = _m("quota.protected.queue_wait", queue=line.queue, threshold=Quantity(limit, "duration"),
                         current=Quantity(before, "count"), plan=Quantity(after, "count"))
            summary = f"queue {line.queue}: {after} records past {limit / 60:.0f} min instead of {before}"
            flags.append(_flag("queue_wait", cluster, line.queue, current=float(before), planned=float(after),
                               threshold=limit, message=message, summary=summary))
    return flags


def _scenario_flags(config: Config, now: pl.DataFrame, plan: pl.DataFrame) -> list[dict[str, Any]]:
    flags = []
    protected = [str(s) for s in config.quota.protected_scenarios]
    for cluster in sorted(set(now["cluster"].drop_nulls().to_list())):
        for scenario in protected:
            def p95(frame: pl.DataFrame, cluster: str = cluster, scenario: str = scenario) -> float | None:
                return _p95(frame.filter((pl.col("cluster") == cluster) & (pl.col("scenario") == scenario))["_wait"])

            before, after = p95(now), p95(plan)
            if before is None or after is None:
                continue
            if after > before + max(MIN_WORSE_S, config.quota.min_gain * before):
                message = _m("quota.protected.scenario_wait", scenario=scenario, cluster=cluster,
                             current=Quantity(before, "duration"), plan=Quantity(after, "duration"))
                summary = (f"{scenario} on {cluster}: replayed wait p95 {after / 60:.0f} min instead of "
                           f"{before / 60:.0f} min")
                flags.append(_flag("scenario_wait", cluster, scenario, current=before, planned=after,
                                   threshold=None, message=message, summary=summary))
    return flags


def protected_worse(analysis: MonthAnalysis, changes: Mapping[tuple[str, str], int | None], config: Config
                    ) -> list[dict[str, Any]]:
    """The protected objectives the plan's (cluster, account) -> limit changes make worse in the replay,
    each with its value under the current limits and under the plan; empty when none (or no change)."""
    if not changes:
        return []
    clusters = {c for c, _a in changes}
    limits = {**analysis.limits, **changes}
    now = _with_waits(analysis.segments(None, clusters), analysis.length_s)
    plan = _with_waits(analysis.segments(limits, clusters), analysis.length_s)
    return [*_reserve_flags(config, analysis, now, plan), *_queue_flags(config, now, plan),
            *_scenario_flags(config, now, plan)]
