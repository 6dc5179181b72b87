"""Fairness evaluator: each team's GPU-hours as a multiple of its entitled share of the pool.

share_over_entitlement = (team GPU-hours / GPU-hours of all configured teams) / entitled_share.
1.0 means exactly its share. jain_index, one row for the pool, is Jain's index over those
multiples, (sum x)^2 / (n * sum x^2): 1 when every team uses the same multiple of its share, 1/n
when one team uses everything; it has no objective unless one is configured.

Without a configured objective (any scenario's `share_over_entitlement` SLO), the objective is
DEFAULT_OBJECTIVE: a team may use a quarter more than its share before it counts as over.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from gpusteward.config.schema import Config
from gpusteward.domain import UNATTRIBUTED, Scenario
from sla.common import ALL_SCENARIOS, classified_jobs, fmt_ratio, result_row, results_frame, slo_for, window_of
from sla.inputs import EvaluationInputs
from sla.usage import queue_usage

DEFAULT_OBJECTIVE = 1.25
INDICATOR = "share_over_entitlement"


def fairness_objective(config: Config) -> float:
    """The first configured share_over_entitlement threshold in scenario order, else the default."""
    for scenario in Scenario:
        sc = config.scenarios.get(scenario)
        for slo in sc.slos if sc else []:
            if slo.indicator == INDICATOR:
                return slo.threshold
    return DEFAULT_OBJECTIVE


class FairnessEvaluator:
    """Built-in evaluator; registered in `default_registry()` like any add-on."""

    @property
    def scenarios(self) -> frozenset[Scenario]:
        return frozenset(Scenario)

    def evaluate(self, inputs: EvaluationInputs, config: Config) -> pl.DataFrame:
        usage = queue_usage(inputs, config)
        hours = dict(usage.group_by("team").agg(pl.col("gpu_hours").sum()).iter_rows())
        records = dict(usage.group_by("team").agg(pl.col("jobs").sum()).iter_rows())
        total = sum(hours.get(team, 0.0) for team in config.teams)
        unattributed = hours.get(UNATTRIBUTED, 0.0)
        jobs = classified_jobs(inputs, config)
        known = jobs.filter(pl.col("gpus_allocated").is_not_null() | pl.col("start_time").is_null()).height
        completeness = known / jobs.height if jobs.height else None
        objective = fairness_objective(config)
        pool = f"{total:,.0f} GPU-hours used by all teams in {window_of(inputs).hours:,.0f} hours"
        if unattributed:
            pool += f" ({unattributed:,.0f} more GPU-hours not attributed to any team)"
        rows: list[dict[str, Any]] = []
        for name in sorted(config.teams):
            entitled = config.teams[name].entitled_share
            used = hours.get(name, 0.0)
            share = used / total if total > 0 else None
            value = share / entitled if share is not None and entitled > 0 else None
            evidence = (
                f"{used:,.1f} GPU-hours, {fmt_ratio(share)} of the pool against an entitled {fmt_ratio(entitled)}"
            )
            if entitled <= 0:
                evidence += " (no entitlement: any use is over)"
            rows.append(result_row(
                inputs, scenario=ALL_SCENARIOS, subject_kind="team", subject=name, indicator=INDICATOR,
                value=value, objective=objective, rows=int(records.get(name, 0)), completeness=completeness,
                evidence=f"{evidence}; {pool}",
            ))
        multiples = [r["value"] for r in rows if r["value"] is not None]
        squares = sum(x * x for x in multiples)
        jain = sum(multiples) ** 2 / (len(multiples) * squares) if multiples and squares > 0 else None
        slo = next((o for o in (slo_for(config, s, "jain_index") for s in Scenario) if o is not None), None)
        rows.append(result_row(
            inputs, scenario=ALL_SCENARIOS, subject_kind="pool", subject="pool", indicator="jain_index", value=jain,
            objective=slo.threshold if slo else None, slo=slo, rows=len(multiples), completeness=completeness,
            evidence=f"over {len(multiples)} teams' share_over_entitlement; {pool}",
        ))
        return results_frame(rows)
