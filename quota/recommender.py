"""Quota recommender (pure): SLA results and usage in, proposed account quota changes out.

Rules, applied per cluster to each team account's latest GPU limit:
1. Lower: a team over its share (share_over_entitlement above its objective) that used GPUs on
   the cluster gets its limit lowered by max_step, never below max(team.min_gpus, the team's
   entitled share of the cluster's guaranteed capacity).
2. Raise: a queue whose wait objective was missed is attributed to the team(s) whose own wait in
   that queue missed it (or, if none alone did, the team that waited longest). Those teams'
   limits rise by max_step, worst wait first, while the cluster has headroom. A team over its
   share is never raised.
3. Capacity: guaranteed capacity is the cluster's GPUs minus its inference reserve. Raises only
   use headroom below max(guaranteed, the sum of the current limits), after the lowers: a plan never
   takes the sum of limits past capacity, and never grows a sum that is already past it (then raises
   only reuse what the lowers freed). Unknown cluster size: no raises there.
4. Fairness: weighted max-min. Headroom goes one GPU at a time to the starving account with the
   lowest limit per unit of entitled share (ties: worst wait, then name), each capped at one step.
   Demand weighting: with a DEMAND frame (`quota.demand`: running plus pending GPU-hours per cluster
   and team, and the part inside `quota.business_hours`), business-hours demand counts
   `business_weight` times (default 2: "counts double"). A team's entitled share is multiplied by
   (demand + (weight - 1) x business demand) / demand, so teams whose demand falls in business hours
   get headroom first. Weight 1, or no demand, leaves the plan exactly as without it.
Steps are relative: |proposed - current| <= max_step x current, whole GPUs, rounded toward no change.
Unlimited (null) limits are left alone: there is no number to step from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from gpusteward.attribution import team_of_account
from gpusteward.config.schema import Config
from gpusteward.domain import UNATTRIBUTED
from sla.common import human_duration
from sla.results import QUOTA_PLAN_ITEMS

_WAITS = {"queue_wait_p50": "wait_p95_s", "queue_wait_p95": "wait_p95_s", "queue_wait_max": "wait_max_s"}
_EPS = 1e-9
BUSINESS_WEIGHT = 2.0
"""How much more demand inside `quota.business_hours` counts than demand outside them."""


@dataclass
class _Account:
    cluster: str
    name: str
    team: str
    current: int
    proposed: int
    reasons: list[str] = field(default_factory=list)
    evidence: list[str] = field(default_factory=list)
    effects: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class _Starved:
    team: str
    cluster: str
    severity: float  # the team's wait / objective, the worst of its starving queues
    evidence: str


def latest_quotas(quotas: pl.DataFrame) -> pl.DataFrame:
    """The latest account limit per (cluster, account)."""
    return (
        quotas.filter(pl.col("kind") == "account")
        .sort("ts")
        .group_by("cluster", "name")
        .agg(pl.col("gpu_limit").last())
        .sort("cluster", "name")
    )


def guaranteed_capacity(config: Config, cluster: str, capacity: Mapping[str, int] | None = None) -> int | None:
    """The cluster's GPUs minus its inference reserve; None when the GPU count is unknown."""
    gpus = (capacity or {}).get(cluster) or next((c.gpus for c in config.clusters if c.name == cluster), 0)
    if gpus <= 0:
        return None
    reserve = sum(line.min_gpus for line in config.protection.inference_reserve if line.cluster == cluster)
    return max(0, gpus - reserve)


def _step(current: int, max_step: float) -> int:
    return math.floor(current * max_step + _EPS)


def _over_share(results: pl.DataFrame) -> dict[str, tuple[float, float]]:
    rows = results.filter(
        (pl.col("indicator") == "share_over_entitlement") & (pl.col("subject_kind") == "team") & (pl.col("met").not_())
    )
    return {r["subject"]: (r["value"], r["objective"]) for r in rows.iter_rows(named=True)}


def _starved(results: pl.DataFrame, usage: pl.DataFrame) -> list[_Starved]:
    missed = results.filter(
        (pl.col("subject_kind") == "queue") & pl.col("indicator").is_in(list(_WAITS)) & (pl.col("met").not_())
    ).sort("subject", "scenario", "indicator")
    found: list[_Starved] = []
    for r in missed.iter_rows(named=True):
        col = _WAITS[r["indicator"]]
        objective = float(r["objective"])
        waits = usage.filter(
            (pl.col("queue") == r["subject"]) & (pl.col("scenario") == r["scenario"]) & pl.col(col).is_not_null()
            & (pl.col("team") != UNATTRIBUTED)
        ).sort([col, "team"], descending=[True, False])
        if waits.height == 0:
            continue
        over = waits.filter(pl.col(col) > objective)
        for w in (over if over.height else waits.head(1)).iter_rows(named=True):
            found.append(_Starved(
                team=w["team"], cluster=w["cluster"], severity=w[col] / objective if objective > 0 else math.inf,
                evidence=(
                    f"{r['subject']} {r['indicator']} {human_duration(r['value'])} "
                    f"against {human_duration(objective)}; "
                    f"{w['team']}'s {col.removesuffix('_s').replace('_', ' ')} there {human_duration(w[col])} "
                    f"over {w['started']} started jobs"
                ),
            ))
    return found


def recommend(
    results: pl.DataFrame,
    usage: pl.DataFrame,
    quotas: pl.DataFrame,
    config: Config,
    plan_id: str,
    *,
    capacity: Mapping[str, int] | None = None,
    demand: pl.DataFrame | None = None,
    business_weight: float = BUSINESS_WEIGHT,
) -> pl.DataFrame:
    """QUOTA_PLAN_ITEMS for one plan.

    results: SLA_RESULTS of the month; usage: sla.usage.QUEUE_USAGE; quotas: QUOTA_SNAPSHOTS (the
    latest account row per cluster counts); capacity: GPUs per cluster overriding the config;
    demand: quota.demand.DEMAND, weighted by `business_weight` inside business hours.
    """
    planner = _Planner(config, capacity, latest_quotas(quotas), usage)
    planner.demand = _demand_factors(demand, business_weight)
    over = _over_share(results)
    planner.lower(over)
    planner.raise_(_starved(results, usage), over)
    return pl.DataFrame(planner.items(plan_id), schema=QUOTA_PLAN_ITEMS, orient="row")


@dataclass(frozen=True)
class _Demand:
    factor: float  # (demand + (weight - 1) x business demand) / demand
    gpu_hours: float
    business_gpu_hours: float
    weight: float


def _demand_factors(demand: pl.DataFrame | None, weight: float) -> dict[tuple[str, str], _Demand]:
    if demand is None or demand.is_empty() or weight == 1:
        return {}
    found: dict[tuple[str, str], _Demand] = {}
    for r in demand.iter_rows(named=True):
        total, business = float(r["gpu_hours"] or 0.0), float(r["business_gpu_hours"] or 0.0)
        if total > 0:
            found[(r["cluster"], r["team"])] = _Demand((total + (weight - 1) * business) / total, total, business,
                                                        weight)
    return found


class _Planner:
    """The accounts of one plan and their proposed limits, changed rule by rule."""

    demand: dict[tuple[str, str], _Demand]

    def __init__(
        self, config: Config, capacity: Mapping[str, int] | None, quotas: pl.DataFrame, usage: pl.DataFrame
    ) -> None:
        self.config = config
        self.demand = {}
        self.step = config.quota.max_step
        self.capacity = capacity
        self.accounts: dict[tuple[str, str], _Account] = {}
        for q in quotas.iter_rows(named=True):
            limit = q["gpu_limit"]
            if limit is not None:
                team = team_of_account(config, q["name"])
                self.accounts[(q["cluster"], q["name"])] = _Account(q["cluster"], q["name"], team, limit, limit)
        per_team = usage.group_by("cluster", "team").agg(pl.col("gpu_hours").sum())
        self.used = {(r["cluster"], r["team"]): r["gpu_hours"] for r in per_team.iter_rows(named=True)}

    def lower(self, over: dict[str, tuple[float, float]]) -> None:
        for acct in self.accounts.values():
            used = self.used.get((acct.cluster, acct.team), 0.0)
            if acct.team not in over or acct.team not in self.config.teams or used <= 0:
                continue
            team = self.config.teams[acct.team]
            guaranteed = guaranteed_capacity(self.config, acct.cluster, self.capacity)
            entitled = math.ceil(team.entitled_share * guaranteed - _EPS) if guaranteed is not None else 0
            floor = max(team.min_gpus, entitled)
            proposed = max(floor, acct.current - _step(acct.current, self.step))
            if proposed >= acct.current:
                continue
            value, objective = over[acct.team]
            acct.proposed = proposed
            acct.reasons.append(
                f"Lower {acct.team}'s GPU quota on {acct.cluster}: it used {value:.2f}x its entitled share "
                f"of the pool (objective at most {objective:.2f}x)."
            )
            acct.evidence.append(
                f"share_over_entitlement {value:.2f} against {objective:.2f}; {used:,.0f} GPU-hours on "
                f"{acct.cluster} this month; floor {floor} GPUs (min_gpus {team.min_gpus}, entitled {entitled})"
            )
            acct.effects.append(
                f"Frees up to {acct.current - proposed} GPUs on {acct.cluster} for teams below their share."
            )

    def raise_(self, starved: list[_Starved], over: dict[str, tuple[float, float]]) -> None:
        """Weighted max-min: headroom goes one GPU at a time to the starving account whose limit is
        lowest per unit of entitled share (ties: worst wait, then name), each capped at one step."""
        by_team: dict[tuple[str, str], list[_Starved]] = {}
        for s in starved:
            if s.team not in over:
                by_team.setdefault((s.cluster, s.team), []).append(s)
        for cluster in sorted({c for c, _t in by_team}):
            guaranteed = guaranteed_capacity(self.config, cluster, self.capacity)
            if guaranteed is None:
                continue
            mine = [a for a in self.accounts.values() if a.cluster == cluster]
            # Never past capacity minus the reserve; where the limits already are past it (caps
            # oversubscribed), never grow their sum: raises then only reuse what the lowers freed.
            ceiling = max(guaranteed, sum(a.current for a in mine))
            headroom = ceiling - sum(a.proposed for a in mine)
            severity = {t: max(s.severity for s in ss) for (c, t), ss in by_team.items() if c == cluster}
            candidates = sorted(
                (a for a in mine if a.team in severity and a.proposed == a.current), key=lambda a: a.name
            )
            cap = {a.name: a.current + _step(a.current, self.step) for a in candidates}
            while headroom >= 1:
                open_ = [a for a in candidates if a.proposed < cap[a.name]]
                if not open_:
                    break
                pick = min(open_, key=lambda a: (a.proposed / self._weight(a), -severity[a.team], a.name))
                pick.proposed += 1
                headroom -= 1
            for acct in candidates:
                if acct.proposed == acct.current:
                    continue
                grant = acct.proposed - acct.current
                acct.reasons.append(
                    f"Raise {acct.team}'s GPU quota on {cluster}: its jobs wait longer than the queue objective allows."
                )
                acct.evidence.extend(s.evidence for s in by_team[(cluster, acct.team)])
                acct.evidence.append(
                    f"sum of {cluster}'s limits kept at most {ceiling} GPUs ({guaranteed} guaranteed: cluster minus "
                    "inference reserve); headroom shared by weighted max-min over entitled shares"
                )
                weighted = self.demand.get((cluster, acct.team))
                if weighted is not None:
                    acct.evidence.append(
                        f"demand {weighted.gpu_hours:,.0f} GPU-hours running or pending, "
                        f"{weighted.business_gpu_hours / weighted.gpu_hours:.0%} of it in business hours "
                        f"({self.config.quota.business_hours} local, weighted x{weighted.weight:g})"
                    )
                acct.effects.append(
                    f"Up to {grant} more GPUs at once for {acct.team} on {cluster}, so its queued jobs start sooner "
                    "and the queue's wait should fall toward its objective."
                )

    def _weight(self, acct: _Account) -> float:
        """The account's entitled share, scaled by its business-hours weighted demand when given."""
        found = self.config.teams.get(acct.team)
        share = found.entitled_share if found is not None and found.entitled_share > 0 else 1.0
        weighted = self.demand.get((acct.cluster, acct.team))
        return share * weighted.factor if weighted is not None else share

    def items(self, plan_id: str) -> list[dict[str, Any]]:
        return [_item(plan_id, a) for _key, a in sorted(self.accounts.items()) if a.proposed != a.current]


def _item(plan_id: str, acct: _Account) -> dict[str, Any]:
    return {
        "plan_id": plan_id,
        "cluster": acct.cluster,
        "kind": "account",
        "name": acct.name,
        "team": acct.team,
        "current_gpus": acct.current,
        "proposed_gpus": acct.proposed,
        "reason": " ".join(acct.reasons),
        "evidence": "; ".join([*acct.evidence, f"limit {acct.current} -> {acct.proposed} GPUs"]),
        "expected_effect": " ".join(acct.effects),
    }
