"""Fairness evaluator: each team's GPU use on each cluster against its entitlement of that cluster's capacity.

Entitlement is per cluster: `teams.<t>.cluster_shares.<cluster>`, else the pool-wide `entitled_share`,
times the cluster's guaranteed GPUs (its GPUs minus the inference reserve). Over a window of H hours a
team is entitled to `entitled GPUs x H` GPU-hours there.

Online inference on a cluster with an inference reserve runs on that reserve and is left out.

A pool is work-conserving (Slurm lets any account run up to its GrpTRES limit on idle nodes; Kueue
lends unused nominalQuota to the cohort): GPU-time a team holds above its entitled GPUs while no
other team's job is pending on that cluster took nothing from anyone. That is *borrowing*, reported
apart and never counted as over-use. Only GPU-time above the entitlement while another team waited
on the cluster is *contended* use.

share_over_entitlement = (team GPU-hours - borrowed GPU-hours, all clusters) / (entitled GPU-hours,
all clusters). 1.0 means exactly its entitlement. jain_index, one row for the pool, is Jain's index
over those multiples, (sum x)^2 / (n * sum x^2).

Without a configured objective (any scenario's `share_over_entitlement` SLO), the objective is
DEFAULT_OBJECTIVE: a team may use a quarter more than its share before it counts as over.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import polars as pl

from gpusteward import evidence as ev
from gpusteward.capacity import cards_per_cluster
from gpusteward.config.schema import Config
from gpusteward.domain import UNATTRIBUTED, Scenario
from sla.common import ALL_SCENARIOS, classified_jobs, result_row, results_frame, slo_for, window_of
from sla.contention import job_spans, timelines
from sla.inputs import EvaluationInputs

DEFAULT_OBJECTIVE = 1.25
INDICATOR = "share_over_entitlement"

CLUSTER_SHARES = pl.Schema(
    {
        "cluster": pl.Utf8,
        "team": pl.Utf8,
        "entitled_share": pl.Float64,  # of the cluster's guaranteed GPUs
        "guaranteed_gpus": pl.Int64,  # cluster GPUs minus the inference reserve; null when unknown
        "entitled_gpus": pl.Float64,
        "gpu_hours": pl.Float64,  # GPU-hours held in the window
        "borrowed_gpu_hours": pl.Float64,  # above the entitlement while no other team waited there
        "contended_gpu_hours": pl.Float64,  # above the entitlement while another team waited there
        "entitled_gpu_hours": pl.Float64,  # entitled GPUs x window hours
    }
)


def fairness_objective(config: Config) -> float:
    """The first configured share_over_entitlement threshold in scenario order, else the default."""
    for scenario in Scenario:
        sc = config.scenarios.get(scenario)
        for slo in sc.slos if sc else []:
            if slo.indicator == INDICATOR:
                return slo.threshold
    return DEFAULT_OBJECTIVE


def cluster_gpus(config: Config, inventory: pl.DataFrame | None = None) -> dict[str, int]:
    """GPUs per cluster: the configured count, else the physical cards telemetry has shown there (a
    card split into MIG instances counts once)."""
    seen: dict[str, int] = {}
    if inventory is not None and inventory.height and "cluster" in inventory.columns:
        seen = {c: n for c, n in cards_per_cluster(inventory).items() if c is not None}
    found = dict(seen)
    for c in config.clusters:
        if c.gpus > 0:
            found[c.name] = c.gpus
    return found


def guaranteed_capacity(config: Config, cluster: str, capacity: Mapping[str, int] | None = None) -> int | None:
    """The cluster's GPUs minus its inference reserve; None when the GPU count is unknown."""
    gpus = (capacity or {}).get(cluster) or next((c.gpus for c in config.clusters if c.name == cluster), 0)
    if gpus <= 0:
        return None
    reserve = sum(line.min_gpus for line in config.protection.inference_reserve if line.cluster == cluster)
    return max(0, gpus - reserve)


def entitled_share(config: Config, team: str, cluster: str) -> float:
    found = config.teams.get(team)
    if found is None:
        return 0.0
    return found.cluster_shares.get(cluster, found.entitled_share)


def shared_work(jobs: pl.DataFrame, config: Config) -> pl.DataFrame:
    """The records that compete for the guaranteed GPUs: online inference on a cluster with an
    inference reserve runs on that reserve, outside the capacity the teams' entitlements divide."""
    reserved = sorted({line.cluster for line in config.protection.inference_reserve})
    if not reserved or "scenario" not in jobs.columns:
        return jobs
    return jobs.filter(~((pl.col("scenario") == Scenario.ONLINE_INFERENCE.value) & pl.col("cluster").is_in(reserved)))


def cluster_shares(
    jobs: pl.DataFrame, config: Config, start: Any, end: Any, capacity: Mapping[str, int] | None = None
) -> pl.DataFrame:
    """CLUSTER_SHARES of classified job records over [start, end), one row per configured team and cluster."""
    hours = max(0.0, (end - start).total_seconds() / 3600.0)
    lines = timelines(job_spans(shared_work(jobs, config), start, end), "team", measure="equivalents")
    clusters = sorted(set(lines) | {c.name for c in config.clusters})
    rows: list[dict[str, Any]] = []
    for cluster in clusters:
        line = lines.get(cluster)
        guaranteed = guaranteed_capacity(config, cluster, capacity)
        for team in sorted(config.teams):
            share = entitled_share(config, team, cluster)
            entitled = share * guaranteed if guaranteed is not None else None
            used = borrowed = contended = 0.0
            if line is not None and team in line.running:
                secs = line.seconds
                running = line.running[team]
                others = sum((p for t, p in line.pending.items() if t != team), line.zeros())
                above = np.maximum(0.0, running - (entitled if entitled is not None else np.inf))
                used = float(np.dot(running, secs)) / 3600.0
                borrowed = float(np.dot(above * (others <= 0), secs)) / 3600.0
                contended = float(np.dot(above * (others > 0), secs)) / 3600.0
            rows.append({
                "cluster": cluster, "team": team, "entitled_share": share, "guaranteed_gpus": guaranteed,
                "entitled_gpus": entitled, "gpu_hours": used, "borrowed_gpu_hours": borrowed,
                "contended_gpu_hours": contended,
                "entitled_gpu_hours": entitled * hours if entitled is not None else None,
            })
    return pl.DataFrame(rows, schema=CLUSTER_SHARES, orient="row")


def shares_of(inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
    """CLUSTER_SHARES of the month's job records (capacity from the config, else the GPU inventory)."""
    window = window_of(inputs)
    return cluster_shares(classified_jobs(inputs, config), config, window.start, window.end,
                          cluster_gpus(config, inputs.gpus))


class FairnessEvaluator:
    """Built-in evaluator; registered in `default_registry()` like any add-on."""

    @property
    def scenarios(self) -> frozenset[Scenario]:
        return frozenset(Scenario)

    def evaluate(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        jobs = classified_jobs(inputs, config)
        window = window_of(inputs)
        shares = cluster_shares(jobs, config, window.start, window.end, cluster_gpus(config, inputs.gpus))
        known = jobs.filter(pl.col("gpus_allocated").is_not_null() | pl.col("start_time").is_null()).height
        completeness = known / jobs.height if jobs.height else None
        objective = fairness_objective(config)
        spans = job_spans(shared_work(jobs, config), window.start, window.end)
        unattributed = float(
            spans.filter(pl.col("team") == UNATTRIBUTED)
            .select(((pl.col("run_e") - pl.col("run_s")) * pl.col("equivalents")).sum()).item() or 0.0
        ) / 3600.0
        pool = [ev.part("entitlement_basis", h=ev.duration(round(window.hours) * 3600.0))]
        if unattributed:
            pool.append(ev.part("unattributed", n=ev.gpu_hours(unattributed)))
        rows: list[dict[str, Any]] = []
        for name in sorted(config.teams):
            mine = shares.filter(pl.col("team") == name)
            used = float(mine["gpu_hours"].sum())
            borrowed = float(mine["borrowed_gpu_hours"].sum())
            contended = float(mine["contended_gpu_hours"].sum())
            entitled = mine["entitled_gpu_hours"].drop_nulls()
            entitled_hours = float(entitled.sum()) if entitled.len() else None
            value = (used - borrowed) / entitled_hours if entitled_hours else None
            per_cluster = [
                ev.part("team_on_cluster", cluster=r["cluster"], used=ev.gpu_hours(r["gpu_hours"]),
                        entitled=ev.gpu_hours(r["entitled_gpu_hours"] or 0.0), share=ev.ratio(r["entitled_share"]),
                        gpus=ev.gpus(r["guaranteed_gpus"]), borrowed=ev.gpu_hours(r["borrowed_gpu_hours"]),
                        contended=ev.gpu_hours(r["contended_gpu_hours"]))
                for r in mine.iter_rows(named=True) if r["guaranteed_gpus"] is not None
            ]
            parts = [ev.part("team_use", used=ev.gpu_hours(used), borrowed=ev.gpu_hours(borrowed),
                             contended=ev.gpu_hours(contended))]
            parts += per_cluster or [ev.part("capacity_unknown")]
            if entitled_hours == 0:
                parts.append(ev.part("no_entitlement"))
            rows.append(result_row(
                inputs, scenario=ALL_SCENARIOS, subject_kind="team", subject=name, indicator=INDICATOR,
                value=value, objective=objective, rows=int(jobs.filter(pl.col("team") == name).height),
                completeness=completeness, evidence=ev.encode(parts + pool),
            ))
        multiples = [r["value"] for r in rows if r["value"] is not None]
        squares = sum(x * x for x in multiples)
        jain = sum(multiples) ** 2 / (len(multiples) * squares) if multiples and squares > 0 else None
        slo = next((o for o in (slo_for(config, s, "jain_index") for s in Scenario) if o is not None), None)
        rows.append(result_row(
            inputs, scenario=ALL_SCENARIOS, subject_kind="pool", subject="pool", indicator="jain_index", value=jain,
            objective=slo.threshold if slo else None, slo=slo, rows=len(multiples), completeness=completeness,
            evidence=ev.encode([ev.part("jain_over", n=len(multiples)), *pool]),
        ))
        return results_frame(rows)
