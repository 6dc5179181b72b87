"""Capacity: inference headroom against the reserve line, per inference service, and telemetry per host.

- reserve_headroom_gpus (online_inference, per cluster with an inference reserve line): the fewest
  GPUs available to online inference in any minute (as the protection line counts them, see
  sla.protection) minus the line's `min_gpus`. Below 0 the reserve was breached; the evidence names
  the episodes.
- telemetry_completeness (scenario `all`, per host): GPU-minutes with a row / GPU-minutes the
  inventory expects (each GPU from the later of the window start and its first sighting). A silent
  exporter shows here with the host's name.
- per inference service (`service_capacity_rows`, called by the online inference evaluator):
  `replicas`, `gpus_serving` and `capacity_headroom`, see that function and `capacity_headroom`.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from datetime import datetime
from typing import Any

import polars as pl

from gpusteward import evidence as ev
from gpusteward.capacity import held_gpus
from gpusteward.config.inference import ServiceJobRule
from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from gpusteward.indicators import INDICATORS
from gpusteward.objectives import DEFAULT_TELEMETRY_COMPLETENESS
from gpusteward.tables import conform
from sla.common import (
    ALL_SCENARIOS,
    MINUTE,
    Window,
    classified_jobs,
    result_row,
    results_frame,
    slo_for,
    window_of,
    with_overlap,
)
from sla.histogram import quantiles_of, summed_histograms
from sla.inputs import GPU_INVENTORY, EvaluationInputs
from sla.minute_digest import minute_digest
from sla.protection import cluster_gpus, held_per_minute, holders, inference_reserve_episodes
from sla.service_jobs import ServiceMatcher

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
            parts = [ev.part("reserve_minutes", total=ev.gpus(total), worst=ev.gpus(worst), r=ev.gpus(line.min_gpus))]
            if mine.height:
                spans = tuple(
                    ev.part("span_gpus", start=r["start"], end=r["end"], lasted=ev.duration(r["minutes"] * 60.0),
                            gpus=ev.gpus(r["worst_value"]))
                    for r in mine.head(3).iter_rows(named=True)
                )
                parts.append(ev.part("breached_in", n=mine.height, spans=spans))
            rows.append(result_row(
                inputs, scenario=_INFERENCE, subject_kind="cluster", subject=line.cluster,
                indicator="reserve_headroom_gpus", value=float(worst - line.min_gpus),
                objective=slo.threshold if slo else None, slo=slo, rows=per_minute.height, completeness=1.0,
                evidence=ev.encode(parts),
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
        digest = minute_digest(inputs, config.idle)
        # (cluster, host, gpu, ts) is the table's key: one row per GPU-minute.
        present = digest.gpus.group_by("cluster", "host").agg(pl.col("rows").sum().alias("present"))
        gaps = digest.host_silences
        stats = expected.join(present, on=["cluster", "host"], how="left").join(
            gaps, on=["cluster", "host"], how="left"
        ).sort("cluster", "host")
        objective = _objective(config)
        rows: list[dict[str, Any]] = []
        for s in stats.iter_rows(named=True):
            exp, got = int(s["expected"]), int(s["present"] or 0)
            parts = [ev.part("gpu_minutes_reported", n=got, m=exp, g=ev.gpus(s["gpus"]))]
            if s["gap_minutes"]:
                parts.append(ev.part("host_silence", start=s["gap_start"], end=s["gap_end"],
                                     lasted=ev.duration(s["gap_minutes"] * 60.0)))
            rows.append(result_row(
                inputs, scenario=ALL_SCENARIOS, subject_kind="host", subject=f"{s['host']}",
                indicator="telemetry_completeness", value=got / exp if exp else None, objective=objective,
                rows=got, completeness=None, evidence=ev.encode(parts),
            ))
        return results_frame(rows)


def _objective(config: Config) -> float:
    """The first telemetry_completeness objective configured in any scenario, else the default."""
    for scenario in Scenario:
        sc = config.scenarios.get(scenario)
        for slo in sc.slos if sc else []:
            if slo.indicator == "telemetry_completeness":
                return slo.threshold
    return DEFAULT_TELEMETRY_COMPLETENESS



# --- Per inference service: replicas, GPUs serving, capacity headroom -------------------------------

NEAR_CAPACITY = 0.2
"""A service with less than this share of its capacity left at busy times is "near capacity"
(used when no `capacity_headroom` objective is configured)."""
SATURATED_KV = 0.9  # KV-cache use at which a replica is counted as full
MIN_SATURATED_SLOTS = 3  # fewer saturated slots than this say too little about where capacity lies
BUSY_QUANTILE = 0.95  # "busy times": this quantile of the month's 5-minute slots by load
_P99 = 0.99
SERVICE_CAPACITY_INDICATORS = ("replicas", "gpus_serving", "capacity_headroom")


def service_slots(frame: pl.DataFrame, latency_p99_objective: float | None) -> pl.DataFrame:
    """Per service and 5-minute slot of `frame` (INFERENCE_WINDOWS plus `slot`): replicas, load, saturation.

    `rate` is requests per second per replica (requests / replica-seconds the windows cover), so a slot
    with fewer replicas up is compared fairly; `saturated` is true when any replica had requests waiting
    at a window's end, any replica's KV cache was at least SATURATED_KV full, or the slot's p99
    latency was above `latency_p99_objective`.
    """
    per_replica = frame.group_by("service", "slot", "instance").agg(
        pl.col("cluster").first(),
        pl.col("requests").sum(),
        pl.col("window_s").cast(pl.Float64).sum().alias("seconds"),
        pl.col("waiting").max(),
        pl.col("kv_cache_usage").max().alias("kv"),
    )
    slots = per_replica.group_by("service", "slot").agg(
        pl.col("cluster").mode().sort().first(),
        pl.len().alias("replicas"),
        pl.col("requests").sum(),
        pl.col("seconds").sum(),
        pl.col("waiting").max(),
        pl.col("kv").mean(),
        pl.col("kv").max().alias("kv_max"),
    )
    slots = slots.with_columns(
        pl.when(pl.col("seconds") > 0).then(pl.col("requests") / pl.col("seconds")).otherwise(None).alias("rate")
    )
    slow = pl.lit(value=False)
    if latency_p99_objective is not None and frame.height:
        p99 = quantiles_of(summed_histograms(frame, ["service", "slot"], "e2e_le", "e2e_counts"), {"p99": _P99})
        slots = slots.join(p99.select("service", "slot", "p99"), on=["service", "slot"], how="left")
        slow = pl.col("p99").fill_null(0.0) > latency_p99_objective
    saturated = (pl.col("waiting").fill_null(0.0) > 0) | (pl.col("kv_max").fill_null(0.0) >= SATURATED_KV) | slow
    return slots.with_columns(saturated.alias("saturated")).sort("service", "slot")


def capacity_headroom(slots: pl.DataFrame) -> tuple[float | None, list[ev.Part]]:
    """Share of a service's capacity left at its busy times, and how it was found (one service's slots).

    Busy load L: the BUSY_QUANTILE of the per-replica request rate over the slots with requests.
    Capacity C: the median per-replica rate of the saturated slots (where requests queued, the KV
    cache was full or p99 broke its objective), when at least MIN_SATURATED_SLOTS were saturated;
    headroom = 1 - L / C, clipped to [0, 1]. A service that never saturated has no observed
    capacity: its headroom is 1 - the BUSY_QUANTILE of its mean KV-cache use (the memory its
    running requests leave free); with neither signal it is unknown (None).
    """
    busy = slots.filter(pl.col("requests") > 0)
    if busy.height == 0:
        return None, [ev.part("no_requests")]
    load = busy["rate"].drop_nulls().quantile(BUSY_QUANTILE, "linear")
    saturated = busy.filter(pl.col("saturated") & pl.col("rate").is_not_null())
    if saturated.height >= MIN_SATURATED_SLOTS and load is not None:
        cap = saturated["rate"].median()
        if isinstance(cap, int | float) and cap > 0:
            value = min(1.0, max(0.0, 1.0 - load / cap))
            return value, [
                ev.part("busy_load", q=BUSY_QUANTILE * 100, n=busy.height, r=float(load)),
                ev.part("saturated", n=saturated.height, r=float(cap), p=ev.ratio(value)),
            ]
    kv = busy["kv"].drop_nulls()
    if kv.len() == 0:
        return None, [ev.part("never_saturated", n=busy.height)]
    used = float(kv.quantile(BUSY_QUANTILE, "linear") or 0.0)
    value = min(1.0, max(0.0, 1.0 - used))
    return value, [ev.part("kv_headroom", n=saturated.height, m=busy.height, q=BUSY_QUANTILE * 100,
                           used=ev.ratio(used), p=ev.ratio(value))]


def serving_jobs(
    jobs: pl.DataFrame, services: list[str], window: Window, rules: Sequence[ServiceJobRule]
) -> pl.DataFrame:
    """Online-inference job records that held GPUs in the window, with the `service` each one serves
    by the configured `inference.service_jobs` rules (sla/service_jobs.py); jobs no rule ties are left out.
    """
    held = with_overlap(
        jobs.filter(
            (pl.col("scenario") == _INFERENCE)
            & pl.col("start_time").is_not_null()
            & (pl.col("gpus_allocated").fill_null(0) > 0)
        ),
        window,
    ).filter(pl.col("held_s") > 0)
    matcher = ServiceMatcher(rules, services)
    served = [matcher.service_of(job) for job in held.iter_rows(named=True)]
    return held.with_columns(pl.Series("service", served, dtype=pl.Utf8)).filter(pl.col("service").is_not_null())


def _reserve_parts(
    config: Config, cluster: str | None, inference_gpus: float, per_replica: float | None, window: Window
) -> list[ev.Part]:
    line = next((r for r in config.protection.inference_reserve if r.cluster == cluster), None)
    if line is None:
        return [ev.part("no_reserve_line", cluster=cluster or "")]
    reserve = ev.part("reserve_on", cluster=cluster or "", n=ev.gpus(line.min_gpus))
    held = {"held": ev.gpus(round(inference_gpus, 1)), "h": ev.duration(round(window.hours) * 3600.0)}
    spare = line.min_gpus - inference_gpus
    if spare < 0:
        return [reserve, ev.part("reserve_exceeded", **held)]
    if per_replica:
        return [reserve, ev.part("room_for", **held, r=math.floor(spare / per_replica + 1e-9),
                                 g=ev.gpus(round(per_replica, 2)))]
    return [reserve, ev.part("reserve_unused", **held, spare=ev.gpus(round(spare, 1)))]


def service_capacity_rows(
    inputs: EvaluationInputs, config: Config, frame: pl.DataFrame, window: Window
) -> list[dict[str, Any]]:
    """replicas, gpus_serving and capacity_headroom per service (`frame`: the month's windows with `slot`).

    - replicas: the median over the service's 5-minute slots of the replicas (distinct `instance`
      values) that reported; evidence: the fewest and most, and the distinct replicas of the month.
    - gpus_serving: GPUs held by the online-inference jobs serving the service (`serving_jobs`),
      averaged over the time from its first window to the window end; null when no job names it.
    - capacity_headroom: `capacity_headroom(...)`; the evidence adds the cluster's inference reserve
      (protection line `inference_reserve`): how many more replicas of the service fit in what the
      reserve guarantees beyond what inference jobs hold there.
    """
    if frame.height == 0 or window.minutes == 0:
        return []
    p99_slo = slo_for(config, _INFERENCE, "latency_p99")
    slots = service_slots(frame, p99_slo.threshold if p99_slo else None)
    services = sorted(slots["service"].unique().to_list())
    jobs = serving_jobs(classified_jobs(inputs, config), services, window, config.inference.service_jobs)
    all_inference = with_overlap(
        classified_jobs(inputs, config).filter(
            (pl.col("scenario") == _INFERENCE) & (pl.col("gpus_allocated").fill_null(0) > 0)
        ),
        window,
    )
    window_s = max(1.0, (window.end - window.start).total_seconds())
    headroom_slo = slo_for(config, _INFERENCE, "capacity_headroom") if "capacity_headroom" in INDICATORS else None
    rows: list[dict[str, Any]] = []
    for service in services:
        mine = slots.filter(pl.col("service") == service)
        clusters = mine["cluster"].drop_nulls().mode().sort().to_list()
        cluster = str(clusters[0]) if clusters else None
        first = mine["slot"].min()
        span_s = max(1.0, (window.end - first).total_seconds()) if isinstance(first, datetime) else window_s
        distinct = frame.filter(pl.col("service") == service)["instance"].n_unique()
        counts = [int(n) for n in mine["replicas"].to_list()]
        median_replicas = float(statistics.median(counts)) if counts else 0.0
        common = {"inputs": inputs, "scenario": _INFERENCE, "subject_kind": "service", "subject": service,
                  "rows": mine.height, "completeness": None}
        rows.append(result_row(
            **common, indicator="replicas", value=median_replicas, objective=None,
            evidence=ev.encode([
                ev.part("median_replicas", n=median_replicas, a=min(counts, default=0), b=max(counts, default=0)),
                ev.part("distinct_replicas", n=distinct),
            ]),
        ))
        served = jobs.filter(pl.col("service") == service)
        gpus: float | None = None
        if served.height:
            gpu_s = float(served.select(pl.col("held_s") * held_gpus()).sum().item())
            gpus = gpu_s / span_s
            ids = [str(j) for j in served["job_id"].unique().sort().to_list()]
            gpu_parts = [ev.part("gpus_on_average", n=ev.gpus(round(gpus, 1)), h=ev.gpu_hours(gpu_s / 3600),
                                 k=served.height, ids=ev.Names(tuple(ids[:6])))]
            if len(ids) > 6:
                gpu_parts.append(ev.part("more_jobs", n=len(ids) - 6))
        else:
            gpu_parts = [ev.part("no_service_jobs" if config.inference.service_jobs else "no_service_job_rules")]
        rows.append(result_row(**common, indicator="gpus_serving", value=gpus, objective=None,
                               evidence=ev.encode(gpu_parts)))
        value, parts = capacity_headroom(mine)
        held = all_inference.filter(pl.col("cluster") == cluster)
        inference_gpus = float(held.select(pl.col("held_s") * held_gpus()).sum().item() or 0.0) / window_s
        per_replica = gpus / median_replicas if gpus and median_replicas else None
        parts += _reserve_parts(config, cluster, inference_gpus, per_replica, window)
        rows.append(result_row(
            **common, indicator="capacity_headroom", value=value,
            objective=headroom_slo.threshold if headroom_slo else None, evidence=ev.encode(parts),
        ))
    return rows


def near_capacity(results: pl.DataFrame) -> pl.DataFrame:
    """capacity_headroom rows (SLA_RESULTS) below their objective, else below NEAR_CAPACITY; tightest first."""
    rows = results.filter((pl.col("indicator") == "capacity_headroom") & pl.col("value").is_not_null())
    limit = pl.col("objective").fill_null(NEAR_CAPACITY)
    return rows.filter(pl.col("value") < limit).sort(["value", "subject"])
