"""Quota recommender (pure): the month's records, limits and objectives in; changes a replay supports out.

Per cluster and team account (docs/quota.md has the grounding of each rule):
1. Raise: only where the team's jobs waited on its own limit (quota.waits: AssocGrpGRES) in a queue
   that missed a wait objective. A wait on a parent account's limit or a QOS's limit, behind
   higher-priority QOS or on a full cluster is not shortened by a bigger limit on the account: it
   becomes advice (below), never a raise.
2. Fairness cut: only where the team held more than its entitlement of the cluster (sla.fairness)
   while other teams waited there, and only down to where the cut binds (below the team's peak, never
   below max(min_gpus, its entitled GPUs)).
3. Right-sizing cut: a limit that never bound (usage never reached it, no job waited on it), on a
   cluster whose limits sum past its guaranteed GPUs, down to no less than the business-hours peak plus
   `quota.headroom_gpus`. Housekeeping: it lowers oversubscription and changes no wait.
4. Every change is replayed (quota.replay) before it is proposed: a raise or fairness cut whose replay
   does not shorten the targeted wait p95 by at least `quota.min_gain` is dropped, and so is a
   right-sizing cut whose replay changes the team's waits.
5. Capacity: the sum of a cluster's limits never goes past max(guaranteed x quota.max_oversubscription,
   sum of current limits); on a cluster already past that a raise only reuses what the cuts on it freed.
Steps are relative: |proposed - current| <= max_step x current (at least one GPU), whole GPUs.
Unlimited (null) limits are left alone. Advice items (kind `advice`) carry the waits the account's own
quota cannot fix, each cause its own advice with its evidence: a parent account's limit (advice on
that parent's limit, naming it), a QOS's limit (advice on the QOS's limit, naming it), priority (QOS
or guaranteed share, naming the holders), capacity (more GPUs), placement (job sizes and placement).
They are never written to a scheduler.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import polars as pl

from gpusteward.attribution import team_of_account
from gpusteward.config.schema import Config
from quota.analysis import MonthAnalysis
from reports.model import Message, Quantity, Text
from reports.plan_text import encode
from sla.fairness import fairness_objective
from sla.results import QUOTA_PLAN_ITEMS

WAIT_INDICATORS = ("queue_wait_p50", "queue_wait_p95", "queue_wait_max")
_EPS = 1e-9
MIN_GAIN_S = 60.0
"""A replayed wait p95 must also fall by at least this many seconds: a minute is below what anyone waits for."""


def _m(key: str, **params: str | Quantity) -> Message:
    return Message(key, tuple((k, Text(v) if isinstance(v, str) else v) for k, v in params.items()))


def _q(value: float | None, kind: str) -> Quantity:
    return Quantity(value, kind)  # type: ignore[arg-type]


@dataclass
class Change:
    cluster: str
    account: str
    team: str
    kind: str  # raise | fairness | rightsize | advice
    current: int | None
    proposed: int | None
    reasons: list[Message] = field(default_factory=list)
    evidence: list[Message] = field(default_factory=list)
    effects: list[Message] = field(default_factory=list)
    targets: tuple[str, ...] = ()  # teams whose wait the change is for


def _step(current: int, max_step: float) -> int:
    return max(1, math.floor(current * max_step + _EPS))


def _missed_queues(results: pl.DataFrame) -> dict[str, list[dict[str, Any]]]:
    rows = results.filter(
        (pl.col("subject_kind") == "queue") & pl.col("indicator").is_in(list(WAIT_INDICATORS)) & (pl.col("met").not_())
    ).sort("subject", "indicator")
    found: dict[str, list[dict[str, Any]]] = {}
    for r in rows.iter_rows(named=True):
        found.setdefault(r["subject"], []).append(r)
    return found


def _outcome(frame: pl.DataFrame, cluster: str, group: str, subject: str) -> dict[str, Any] | None:
    rows = frame.filter((pl.col("cluster") == cluster) & (pl.col("group") == group) & (pl.col("subject") == subject))
    return rows.row(0, named=True) if rows.height else None


def _p95(frame: pl.DataFrame, cluster: str, team: str) -> float:
    row = _outcome(frame, cluster, "team", team)
    return float(row["wait_p95_s"] or 0.0) if row else 0.0


def _gained(before: float, after: float, min_gain: float) -> bool:
    return before - after >= max(MIN_GAIN_S, min_gain * before)


class Recommender:
    """One plan's changes, rule by rule, each replayed before it is kept."""

    def __init__(self, analysis: MonthAnalysis, results: pl.DataFrame, config: Config) -> None:
        self.a = analysis
        self.results = results
        self.config = config
        self.step = config.quota.max_step
        self.min_gain = config.quota.min_gain
        self.changes: dict[tuple[str, str], Change] = {}
        self.advice: list[Change] = []
        self.missed = _missed_queues(results)
        self.binding = {(r["cluster"], r["account"]): r for r in analysis.binding.iter_rows(named=True)}
        self.shares = {(r["cluster"], r["team"]): r for r in analysis.shares.iter_rows(named=True)}
        self._so_far: dict[tuple[Any, ...], pl.DataFrame] = {}

    # -- helpers -------------------------------------------------------------------------------

    def team(self, account: str) -> str:
        return team_of_account(self.config, account)

    def so_far(self, cluster: str) -> pl.DataFrame:
        """OUTCOMES of the replay of the cluster under the changes kept so far: each change is judged on
        what it adds to them, not on what earlier changes did."""
        kept = tuple(sorted((k, c.proposed) for k, c in self.changes.items() if k[0] == cluster))
        key = (cluster, kept)
        if key not in self._so_far:
            self._so_far[key] = self.a.current if not kept else self.a.replay_with(self.limits_with({}), {cluster})
        return self._so_far[key]

    def limits_with(self, extra: dict[tuple[str, str], int]) -> dict[tuple[str, str], int | None]:
        found = dict(self.a.limits)
        found.update({k: c.proposed for k, c in self.changes.items() if c.proposed is not None})
        found.update(extra)
        return found

    def cluster_sum(self, cluster: str, proposed: bool = True) -> int:
        total = 0
        for (c, account), limit in self.a.limits.items():
            if c != cluster or limit is None:
                continue
            change = self.changes.get((c, account))
            total += change.proposed if proposed and change is not None and change.proposed is not None else limit
        return total

    def ceiling(self, cluster: str) -> int:
        """The most the cluster's limits may add up to after a raise: quota.max_oversubscription times its
        guaranteed GPUs (limits are caps, not reservations; 1.0: no oversubscription beyond today's)."""
        return math.floor(self.a.guaranteed[cluster] * self.config.quota.max_oversubscription + _EPS)

    def accounts(self, cluster: str) -> list[tuple[str, int]]:
        return sorted((a, v) for (c, a), v in self.a.limits.items() if c == cluster and v is not None
                      and self.team(a) in self.config.teams)

    def oversubscription(self, cluster: str) -> Message:
        return _m("quota.evidence.oversubscription", cluster=cluster,
                  total=_q(self.cluster_sum(cluster, proposed=False), "gpus"),
                  guaranteed=_q(self.a.guaranteed.get(cluster), "gpus"))

    def binding_evidence(self, cluster: str, account: str) -> Message:
        b = self.binding.get((cluster, account)) or {}
        return _m("quota.evidence.binding", account=account, limit=_q(b.get("gpu_limit"), "gpus"),
                  peak=_q(b.get("peak_gpus"), "gpus"), p95=_q(b.get("p95_gpus"), "gpus"),
                  business_peak=_q(b.get("business_peak_gpus"), "gpus"), at_limit=_q(b.get("at_limit_s"), "duration"),
                  limit_waits=_q(b.get("limit_waits"), "count"), waits=_q(b.get("waits"), "count"))

    def effect(self, outcome: pl.DataFrame, cluster: str, team: str, base: pl.DataFrame) -> Message:
        """The replayed effect on one team: base (the changes before this one) against outcome, with the
        calibration error of the replay under the current limits against what was observed."""
        before = _outcome(base, cluster, "team", team) or {}
        now = _outcome(self.a.current, cluster, "team", team) or {}
        after = _outcome(outcome, cluster, "team", team) or {}
        observed = _outcome(self.a.observed, cluster, "team", team) or {}
        error = None
        if observed.get("wait_p95_s") is not None and now.get("wait_p95_s") is not None:
            error = now["wait_p95_s"] - observed["wait_p95_s"]
        return _m("quota.effect.replay", team=team, cluster=cluster,
                  p95_before=_q(before.get("wait_p95_s"), "duration"),
                  p95_after=_q(after.get("wait_p95_s"), "duration"),
                  p50_before=_q(before.get("wait_p50_s"), "duration"),
                  p50_after=_q(after.get("wait_p50_s"), "duration"),
                  hours_before=_q(before.get("gpu_hours"), "gpu_hours"),
                  hours_after=_q(after.get("gpu_hours"), "gpu_hours"),
                  observed=_q(observed.get("wait_p95_s"), "duration"), error=_q(error, "duration"))

    def moved(self, outcome: pl.DataFrame, cluster: str, skip: Sequence[str], base: pl.DataFrame) -> list[Message]:
        """Replay effects on the other teams of the cluster whose GPU-hours or wait p95 moved."""
        out = []
        for team in sorted(self.config.teams):
            if team in skip:
                continue
            before = _outcome(base, cluster, "team", team)
            after = _outcome(outcome, cluster, "team", team)
            if before is None or after is None:
                continue
            hours = abs((after["gpu_hours"] or 0.0) - (before["gpu_hours"] or 0.0))
            wait = abs((after["wait_p95_s"] or 0.0) - (before["wait_p95_s"] or 0.0))
            if hours >= 1.0 or wait >= MIN_GAIN_S:
                out.append(self.effect(outcome, cluster, team, base))
        return out

    def over_share(self, cluster: str, team: str) -> bool:
        """Whether the team held more than its entitlement of the cluster, beyond the objective, while others waited."""
        share = self.shares.get((cluster, team))
        if share is None or not share["entitled_gpu_hours"] or share["contended_gpu_hours"] <= 0:
            return False
        multiple = (share["gpu_hours"] - share["borrowed_gpu_hours"]) / share["entitled_gpu_hours"]
        return bool(multiple > fairness_objective(self.config))

    # -- rules ---------------------------------------------------------------------------------

    def raises(self) -> None:
        """Rule 1: raise a limit its own jobs waited on, in a queue that missed its wait objective."""
        waits = self.a.waits
        for cluster in sorted(self.a.guaranteed):
            ceiling = max(self.ceiling(cluster), self.cluster_sum(cluster, proposed=False))
            candidates = []
            for account, limit in self.accounts(cluster):
                if (cluster, account) in self.changes or self.over_share(cluster, self.team(account)):
                    continue  # a team holding more than its entitlement while others wait is not raised
                mine = waits.filter((pl.col("cluster") == cluster) & (pl.col("account") == account)
                                    & (pl.col("cause") == "limit") & pl.col("queue").is_in(list(self.missed)))
                if mine.height == 0:
                    continue
                gpu_hours = float((mine["limit_s"] * mine["gpus"]).sum()) / 3600.0
                candidates.append((-gpu_hours, account, limit, mine))
            for _neg, account, limit, mine in sorted(candidates, key=lambda c: (c[0], c[1])):
                headroom = ceiling - self.cluster_sum(cluster)
                grant = min(_step(limit, self.step), headroom)
                team = self.team(account)
                if grant < 1:
                    self.advise_blocked_raise(cluster, account, team, limit, mine)
                    continue
                base = self.so_far(cluster)
                outcome = self.a.replay_with(self.limits_with({(cluster, account): limit + grant}), {cluster})
                before, after = _p95(base, cluster, team), _p95(outcome, cluster, team)
                if not _gained(before, after, self.min_gain):
                    continue
                change = Change(cluster, account, team, "raise", limit, limit + grant, targets=(team,))
                change.reasons.append(_m("quota.reason.raise", team=team, cluster=cluster))
                for queue in sorted(set(mine["queue"].to_list())):
                    for r in self.missed.get(queue, []):
                        change.evidence.append(_m("quota.evidence.missed", queue=queue, indicator=r["indicator"],
                                                  value=_q(r["value"], "duration"),
                                                  objective=_q(r["objective"], "duration")))
                change.evidence.append(_limit_waits(team, cluster, mine))
                change.evidence += [self.binding_evidence(cluster, account), self.oversubscription(cluster)]
                change.effects.append(self.effect(outcome, cluster, team, base))
                change.effects += self.moved(outcome, cluster, (team,), base)
                self.changes[(cluster, account)] = change

    def advise_blocked_raise(self, cluster: str, account: str, team: str, limit: int, mine: pl.DataFrame) -> None:
        change = Change(cluster, account, team, "advice", limit, None)
        change.reasons.append(_m("quota.advice.no_headroom", team=team, cluster=cluster))
        change.evidence += [
            _limit_waits(team, cluster, mine),
            self.oversubscription(cluster),
        ]
        self.advice.append(change)

    def fairness_cuts(self) -> None:
        """Rule 2: cut a team that held more than its entitlement while others waited, where the cut
        binds and the replay shortens the others' waits."""
        objective = fairness_objective(self.config)
        for cluster in sorted(self.a.guaranteed):
            for account, limit in self.accounts(cluster):
                team = self.team(account)
                share = self.shares.get((cluster, team))
                if share is None or not share["entitled_gpu_hours"] or share["contended_gpu_hours"] <= 0:
                    continue
                multiple = (share["gpu_hours"] - share["borrowed_gpu_hours"]) / share["entitled_gpu_hours"]
                if multiple <= objective or (cluster, account) in self.changes:
                    continue
                b = self.binding.get((cluster, account)) or {}
                peak = float(b.get("peak_gpus") or 0.0)
                floor = max(self.config.teams[team].min_gpus, math.ceil(share["entitled_gpus"] - _EPS))
                proposed = max(floor, limit - _step(limit, self.step))
                if proposed >= limit or proposed >= peak:
                    continue  # it would not bind: it frees nothing
                waiting = sorted({t for t in self.a.waits.filter(
                    (pl.col("cluster") == cluster) & (pl.col("team") != team)
                    & pl.col("cause").is_in(["capacity", "priority", "placement"]))["team"].to_list() if t})
                base = self.so_far(cluster)
                outcome = self.a.replay_with(self.limits_with({(cluster, account): proposed}), {cluster})
                helped = [t for t in waiting if _gained(_p95(base, cluster, t), _p95(outcome, cluster, t),
                                                        self.min_gain)]
                if not helped:
                    continue
                change = Change(cluster, account, team, "fairness", limit, proposed, targets=tuple(helped))
                change.reasons.append(_m("quota.reason.fairness", team=team, cluster=cluster,
                                         multiple=_q(multiple, "multiple")))
                change.evidence += [
                    _m("quota.evidence.contended", team=team, cluster=cluster,
                       contended=_q(share["contended_gpu_hours"], "gpu_hours"),
                       borrowed=_q(share["borrowed_gpu_hours"], "gpu_hours"),
                       entitled=_q(share["entitled_gpus"], "gpus"), objective=_q(objective, "multiple")),
                    self.binding_evidence(cluster, account),
                ]
                change.effects += [self.effect(outcome, cluster, t, base) for t in helped]
                change.effects.append(self.effect(outcome, cluster, team, base))
                self.changes[(cluster, account)] = change

    def right_sizing(self) -> None:
        """Rule 3: lower a limit that never bound on an oversubscribed cluster (housekeeping)."""
        headroom = self.config.quota.headroom_gpus
        for cluster in sorted(self.a.guaranteed):
            if self.cluster_sum(cluster, proposed=False) <= self.a.guaranteed[cluster]:
                continue
            for account, limit in self.accounts(cluster):
                if (cluster, account) in self.changes:
                    continue
                b = self.binding.get((cluster, account))
                if b is None or b["at_limit_s"] > 0 or b["limit_waits"] > 0 or b["limit_wait_gpu_hours"] > 0:
                    continue
                team = self.team(account)
                target = max(self.config.teams[team].min_gpus, math.ceil(b["business_peak_gpus"] - _EPS) + headroom)
                proposed = max(target, limit - _step(limit, self.step))
                if proposed >= limit:
                    continue
                base = self.so_far(cluster)
                outcome = self.a.replay_with(self.limits_with({(cluster, account): proposed}), {cluster})
                before, after = _p95(base, cluster, team), _p95(outcome, cluster, team)
                if after > before + 1e-6:
                    continue  # the replay says it would bind after all: not housekeeping
                change = Change(cluster, account, team, "rightsize", limit, proposed)
                change.reasons.append(_m("quota.reason.rightsize", team=team, cluster=cluster))
                change.evidence += [
                    _m("quota.evidence.never_bound", account=account, cluster=cluster,
                       business_peak=_q(b["business_peak_gpus"], "gpus"), peak=_q(b["peak_gpus"], "gpus"),
                       headroom=_q(headroom, "gpus")),
                    self.binding_evidence(cluster, account), self.oversubscription(cluster),
                ]
                change.effects.append(_m("quota.effect.rightsize", team=team, cluster=cluster,
                                         freed=_q(limit - proposed, "gpus")))
                self.changes[(cluster, account)] = change

    def advice_for_waits(self) -> None:
        """Starving queues whose wait the account's own quota cannot shorten: each cause its advice,
        with its evidence."""
        waits = self.a.waits
        for queue in sorted(self.missed):
            mine = waits.filter(pl.col("queue") == queue)
            if mine.height == 0:
                continue
            by = {c: float((mine[f"{c}_s"] * mine["gpus"]).sum()) for c in ("limit", *_ADVISED)}
            total = sum(by.values())
            main = max(_ADVISED, key=lambda c: by[c])
            if total <= 0 or by[main] <= by["limit"]:
                continue
            cluster = str(mine["cluster"][0])
            team = str(mine.sort("wait_s", descending=True)["team"][0])
            change = Change(cluster, queue, team, "advice", None, None)
            params: dict[str, str | Quantity] = {"queue": queue, "cluster": cluster}
            held = _held_by(mine, main) if main in ("parent_limit", "qos_limit") else ""
            if main == "parent_limit":
                params["parent"] = held or "-"
            elif main == "qos_limit":
                params["qos"] = held or "-"
            change.reasons.append(_m(f"quota.advice.{main}", **params))
            for r in self.missed[queue]:
                change.evidence.append(_m("quota.evidence.missed", queue=queue, indicator=r["indicator"],
                                          value=_q(r["value"], "duration"), objective=_q(r["objective"], "duration")))
            if held:
                change.evidence.append(self.held_limit(cluster, main, held, mine))
            change.evidence.append(_m(f"quota.evidence.causes.{_source(mine)}", queue=queue,
                                      **{c: _q(by[c] / total, "percent") for c in ("limit", *_ADVISED)},
                                      holders=_holders(mine) or "-"))
            self.advice.append(change)

    def held_limit(self, cluster: str, cause: str, name: str, waits: pl.DataFrame) -> Message:
        """The parent account's or QOS's limit that held the queue's jobs, and what they waited on it."""
        model = self.a.models.get(cluster)
        if cause == "parent_limit":
            limit = self.a.limits.get((cluster, name))
            if limit is None and model is not None:
                limit = model.account_limits.get(name)  # a parent's limit from the account tree
            sharing = sorted({str(a) for a in waits.filter((pl.col("limit_name") == name)
                                                           & (pl.col("parent_limit_s") > 0))["account"].to_list()})
            extra: dict[str, str | Quantity] = {"parent": name, "accounts": ", ".join(sharing) or "-"}
        else:
            limit = model.qos_limits.get(name) if model else None
            extra = {"qos": name}
        on = waits.filter(pl.col(f"{cause}_s") > 0)
        return _m(f"quota.evidence.{cause}", cluster=cluster, limit=_q(limit, "gpus"), jobs=_q(on.height, "count"),
                  gpu_hours=_q(float((on[f"{cause}_s"] * on["gpus"]).sum()) / 3600.0, "gpu_hours"), **extra)

    def items(self, plan_id: str) -> list[dict[str, Any]]:
        changes = [c for _k, c in sorted(self.changes.items())] + self.advice
        return [_item(plan_id, c) for c in changes]


_ADVISED = ("parent_limit", "qos_limit", "priority", "capacity", "placement")
"""The causes of a wait that the account's own limit cannot shorten, in quota.waits' order."""


def _held_by(waits: pl.DataFrame, cause: str) -> str:
    """The parent account or QOS whose limit held the most of the queue's GPU-time waited on that kind
    of limit (quota.waits' `limit_name`, the limit that held each record longest); '' when none is named."""
    name, qos, account = (pl.col(c).fill_null("") for c in ("limit_name", "qos", "account"))
    mine = (name == qos) if cause == "qos_limit" else (name != qos) & (name != account)
    named = waits.filter((pl.col(f"{cause}_s") > 0) & (name != "") & mine)
    if named.is_empty():
        return ""
    by = named.group_by("limit_name").agg((pl.col(f"{cause}_s") * pl.col("gpus")).sum().alias("_w"))
    return str(by.sort(["_w", "limit_name"], descending=[True, False])["limit_name"][0])


def _holders(waits: pl.DataFrame, top: int = 3) -> str:
    """The QOS and team that held the GPUs during the priority waits, by share of those GPU-hours waited."""
    weighted = waits.filter(pl.col("priority_s") > 0).with_columns((pl.col("priority_s") * pl.col("gpus")).alias("_w"))
    total = float(weighted["_w"].sum())
    if total <= 0:
        return "-"
    by = weighted.group_by("holders").agg(pl.col("_w").sum()).sort(["_w", "holders"], descending=[True, False])
    shares = [f"{r['holders']} {r['_w'] / total:.0%}" for r in by.head(top).iter_rows(named=True)
              if r["holders"] and r["_w"] / total >= 0.005]  # a holder that rounds to 0% is not named
    return ", ".join(shares)


def _source(waits: pl.DataFrame) -> str:
    """Whether the scheduler's pending reasons said it, or the records, limits and cluster size imply it."""
    return "reasons" if (waits["source"] == "reasons").any() else "derived"


def _limit_waits(team: str, cluster: str, waits: pl.DataFrame) -> Message:
    return _m(f"quota.evidence.limit_waits.{_source(waits)}", team=team, cluster=cluster,
              jobs=_q(waits.height, "count"),
              gpu_hours=_q(float((waits["limit_s"] * waits["gpus"]).sum()) / 3600.0, "gpu_hours"))


def _item(plan_id: str, change: Change) -> dict[str, Any]:
    evidence = list(change.evidence)
    if change.current is not None and change.proposed is not None:
        evidence.append(_m("quota.evidence.change", current=_q(change.current, "gpus"),
                           proposed=_q(change.proposed, "gpus")))
    return {
        "plan_id": plan_id,
        "cluster": change.cluster,
        "kind": "advice" if change.kind == "advice" else "account",
        "name": change.account,
        "team": change.team,
        "current_gpus": change.current,
        "proposed_gpus": change.proposed,
        "reason": encode(change.reasons),
        "evidence": encode(evidence),
        "expected_effect": encode(change.effects),
    }


def recommend(analysis: MonthAnalysis, results: pl.DataFrame, config: Config, plan_id: str) -> pl.DataFrame:
    """QUOTA_PLAN_ITEMS of one plan: kept changes (kind `account`), then advice (kind `advice`)."""
    rec = Recommender(analysis, results, config)
    rec.fairness_cuts()
    rec.right_sizing()
    rec.raises()
    rec.advice_for_waits()
    return pl.DataFrame(rec.items(plan_id), schema=QUOTA_PLAN_ITEMS, orient="row")
