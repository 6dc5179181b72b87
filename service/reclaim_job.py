"""The live reclaimer: on every evaluation interval, plan at the ingest watermark, warn, then act.

One turn:
1. On a snapshot of the warehouse, at its ingest watermark (the minute after the last GPU-minute
   stored, so a lagging import never reads as idleness), plan (sla.reclaim) with the ledger's
   warnings of the running jobs, the live objections and the last hour's actions (for the cap).
2. Decide (sla.reclaim_decide) and store the new ledger lines and the warnings' outbox items in one
   transaction: a restarted service at the same watermark finds them and adds nothing; a crash
   before the commit loses nothing that was sent.
3. Send every `pending` action (auto mode, or approved) to the cluster's scheduler, unless the kill
   switch is on; record its outcome and the action notice. A transient failure stays `pending` and
   is tried again next turn for an hour of watermark time, then it is `failed`.
4. Deliver the outbox's due items (the alert job delivers them too; this only saves an interval).
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any, ClassVar

import polars as pl

from alerts.outbox import Outgoing
from alerts.reclaim_notice import outgoing
from collectors.reclaim_actions import ActionResult, ReclaimActions, ReclaimTarget
from gpusteward.config import Config
from gpusteward.errors import StewardError, TransientError
from service.jobs import JobResult
from service.tasks import snapshot
from sla.common import naive_utc
from sla.reclaim import reclaim_plan, workload_minutes
from sla.reclaim_decide import acted_of, decide, warned_of
from sla.reclaim_inputs import lookback
from sla.reclaim_replay import SPANS, idle_spans, next_turn, quiet_spans, turn_at_or_after
from sla.reclaim_safety import recheck
from warehouse import Warehouse
from warehouse import reclaim_ledger as ledger
from warehouse.control import ControlError
from warehouse.reclaim import idle_stretches, inference_windows, plan_instant, reclaim_inputs, workload_records

log = logging.getLogger("gpusteward.service.reclaim")

RETRY_FOR = timedelta(hours=1)
"""How long (in watermark time) a transiently failing action is tried again before it is `failed`."""

ActionsFor = Callable[[str], ReclaimActions | None]
"""The scheduler actions of a cluster, or None when none is configured for it."""


def actions_from_config(config: Config, env: Mapping[str, str] | None = None) -> ActionsFor:
    """Slurm clusters through their `[[service.slurm]]` transport; `reclaim.kubernetes_clusters` through the
    `[kubernetes]` API server; any other cluster has none (its actions fail, saying so)."""
    from collectors.kube.auth import connect
    from collectors.kube.reclaim import KubeReclaimActions
    from collectors.slurm import SlurmCli
    from collectors.slurm.job_actions import SlurmJobActions
    from service.slurm_queue import slurm_rest

    environ = os.environ if env is None else env
    built: dict[str, ReclaimActions] = {}
    for spec in config.service.slurm:
        rest = slurm_rest(spec.rest_socket, spec.rest_url, spec.rest_user, environ)
        built.setdefault(spec.cluster, SlurmJobActions(cli=SlurmCli(), rest=rest))
    if config.reclaim.kubernetes_clusters:
        api = connect(config.kubernetes, base_dir=config.base_dir, env=environ)
        for cluster in config.reclaim.kubernetes_clusters:
            built.setdefault(cluster, KubeReclaimActions(api, dict(config.reclaim.deployments)))
    return built.get


def _limit_ends(running: pl.DataFrame) -> dict[tuple[str, str], datetime]:
    """(cluster, job id) -> when the running record's time limit ends (a Workload's id: its `job_ref`)."""
    limited = running.filter(pl.col("time_limit_min").is_not_null() & pl.col("start_time").is_not_null())
    return {
        (r["cluster"], r.get("job_ref") or str(r["job_id"])):
            r["start_time"] + timedelta(minutes=int(r["time_limit_min"]))
        for r in limited.iter_rows(named=True)
    }


def expected_recovery(line: Mapping[str, Any], ends: Mapping[tuple[str, str], datetime]) -> float | None:
    """GPU-hours an action gives back: its GPUs for the rest of the job's time limit (None without a limit)."""
    end = ends.get((line["cluster"], line["job_id"]))
    if end is None or line["gpus"] is None:
        return None
    hours: float = max(0.0, (end - line["decided_at"]).total_seconds() / 3600.0)
    return hours * int(line["gpus"])


@dataclass(frozen=True)
class Turn:
    """One turn's decisions: the new ledger lines stored, the plan they came from, and the running job
    records it read (JOBS)."""

    stored: int
    plan: pl.DataFrame
    running: pl.DataFrame

    @property
    def ends(self) -> dict[tuple[str, str], datetime]:
        return _limit_ends(self.running)


@dataclass
class Reclaim:
    """The reclaim job of the service's analysis lane (it takes the write lock only to store)."""

    config: Config
    wh: Warehouse
    actions: ActionsFor
    name: str = "reclaim"
    interval: timedelta = timedelta(minutes=15)
    lock: AbstractContextManager[object] = field(default_factory=threading.RLock)
    notifiers: Mapping[str, Any] | None = None  # receiver name -> Notifier; None: built from the config
    locks_itself: ClassVar[bool] = True

    def run(self, now: datetime) -> JobResult:
        if not self.config.reclaim.policies:
            return JobResult(detail="no reclaim policies")
        with snapshot(self.wh, self.lock) as view:
            at = plan_instant(view)
        if at is None:
            return JobResult(detail="no GPU-minutes yet")
        turn = self.decide_at(now, at)
        stored = turn.stored
        acted = self._execute(now, at, turn)
        delivered = self._deliver(now)
        detail = f"at {naive_utc(at):%Y-%m-%d %H:%M}: {stored} new ledger lines, {acted} actions sent, " \
                 f"{delivered} notices delivered"
        return JobResult(wrote=bool(stored or acted or delivered), detail=detail)

    def decide_at(self, now: datetime, at: datetime) -> Turn:
        """Plan at the watermark `at` and store the new ledger lines with their warnings' outbox items."""
        with snapshot(self.wh, self.lock) as view:
            plan, lines, running = self._plan(view, at)
        # Outbox items fall due at the clock's now, not the watermark's (which skewed exporter clocks can put ahead)
        items = [item for line in lines.to_dicts() if line["kind"] == "warning"
                 for item in self._notice(line, plan, now)]
        with self.lock:
            stored = ledger.store_decisions(self.wh, lines, items)
        return Turn(stored, plan, running)

    def _plan(self, view: Warehouse, at: datetime) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
        inputs = reclaim_inputs(view, at, lookback(self.config))
        starts = inputs.running["start_time"].drop_nulls()
        known = ledger.decisions(view, runs_from=starts.min() if starts.len() else naive_utc(at))  # type: ignore[arg-type]
        inputs = replace(inputs, warned=warned_of(known), exempted=ledger.exemptions(view),
                         recent_actions=ledger.recent_actions(view, at), acted=acted_of(known))
        plan = reclaim_plan(inputs, self.config)
        ends = _limit_ends(inputs.running)
        lines = decide(plan, known, at)
        recovery = [expected_recovery(line, ends) if line["kind"] == "action" else None for line in lines.to_dicts()]
        return plan, lines.with_columns(pl.Series("gpu_hours_recovered", recovery, dtype=pl.Float64)), inputs.running

    def _notice(self, line: Mapping[str, Any], plan: pl.DataFrame, at: datetime) -> list[Outgoing]:
        match = plan.filter((pl.col("cluster") == line["cluster"]) & (pl.col("job_id") == line["job_id"]))
        source = match["util_source"][0] if match.height else None
        return outgoing({**line, "util_source": source}, self.config, at)

    def _execute(self, now: datetime, at: datetime, turn: Turn) -> int:
        """Send the pending actions, each checked again first against this turn's plan (sla.reclaim_safety.recheck):
        an action approved hours after it was decided goes only if the kill switch is off, the job still runs
        and is still the idle candidate it was, and the cluster's per-hour cap has room."""
        if self.config.reclaim.paused:
            return 0  # the kill switch holds back what was approved too, until it is lifted
        with self.lock:
            pending = ledger.pending_actions(self.wh)
            sent_by_cluster = ledger.sent_per_cluster(self.wh, now)
        sent = 0
        for line in pending.to_dicts():
            verdict, why = recheck(line, turn.plan, turn.running, sent_by_cluster.get(line["cluster"], 0), self.config)
            if verdict == "hold":
                with self.lock:
                    ledger.note(self.wh, line["decision_id"], f"waiting: {why}")
                continue
            if verdict in ("ended", "stale"):
                state = "already_ended" if verdict == "ended" else "stale"
                with self.lock:
                    ledger.record_outcome(self.wh, line["decision_id"], state, at=now, outcome=why, recovered=0.0)
                continue
            state, transport, detail = self._act(line, at)
            sent += 1
            if state in ("done", "failed"):
                sent_by_cluster[line["cluster"]] = sent_by_cluster.get(line["cluster"], 0) + 1
            recovered = expected_recovery(line, turn.ends) if state == "done" else (None if state == "pending" else 0.0)
            with self.lock:
                ledger.record_outcome(self.wh, line["decision_id"], state, at=now, transport=transport, outcome=detail,
                                      recovered=recovered)
                if state == "done":  # the owner and team hear what was done, as they heard the warning
                    notice = outgoing({**line, "state": state}, self.config, now, detail=detail)
                    ledger.store_decisions(self.wh, pl.DataFrame(), notice)
        return sent

    def _act(self, line: Mapping[str, Any], at: datetime) -> tuple[str, str | None, str]:
        actions = self.actions(line["cluster"])
        if actions is None:
            where = "[[service.slurm]] or reclaim.kubernetes_clusters"
            return "failed", None, f"no scheduler configured for cluster {line['cluster']} ({where})"
        policy = next((p for p in self.config.reclaim.policies if p.name == line["policy"]), None)
        keeps = policy is not None and policy.action == "scale"
        replicas = max(policy.min_replicas, policy.scale_to or 0) if policy is not None and keeps else None
        target = ReclaimTarget(line["cluster"], line["job_id"], line["action"], line["job"], line["service"], replicas)
        try:
            result: ActionResult = actions.act(target)
        except TransientError as exc:
            if naive_utc(at) - line["decided_at"] < RETRY_FOR:
                log.warning("reclaim %s: %s (tried again next turn)", line["decision_id"], exc)
                return "pending", actions.transport, f"retrying: {exc}"
            return "failed", actions.transport, str(exc)
        except StewardError as exc:
            return "failed", actions.transport, str(exc)
        return result.state, result.transport, result.detail

    def _deliver(self, now: datetime) -> int:
        from alerts.notify import build_notifiers
        from alerts.outbox import Backoff, deliver_due
        from warehouse.outbox import WarehouseOutbox

        notifiers = self.notifiers
        if notifiers is None:
            notifiers = {n.name: n for n in build_notifiers(self.config)[0]}
        settings = self.config.alerts.outbox
        with self.lock:
            done = deliver_due(WarehouseOutbox(self.wh), notifiers, now, backoff=Backoff.from_config(settings),
                               limit=settings.batch)
        return done.delivered


def replay_shadow(wh: Warehouse, config: Config, start: datetime, end: datetime,
                  interval: timedelta | None = None) -> Replayed:
    """What the policies would have done from `start` to `end`, as the live reclaimer turning every `interval`
    (the service's evaluation interval by default) would have decided it: every policy in shadow mode
    (nothing sent, nothing acted on), lines stored as the service stores them. The demo runs it over its
    simulated month, so its review shows what reclaiming would have recovered.

    It plans only at the turns at which the live job could have written something (sla.reclaim_replay):
    the turns inside a span where some job could be a candidate, skipping those at which a warned job
    waits out its grace; at each it plans with the live job's evaluator, on the same instant."""
    shadow = replace(config, reclaim=replace(
        config.reclaim, paused=False, policies=[replace(p, mode="shadow") for p in config.reclaim.policies]))
    step = interval or config.service.evaluate_interval
    origin, stop = naive_utc(start), naive_utc(end)
    if not shadow.reclaim.policies or stop <= origin:
        return Replayed(0, 0, step)
    job = Reclaim(shadow, wh, lambda _cluster: None, notifiers={})
    spans = _spans(wh, shadow, origin, stop, job.lock)
    due: dict[datetime, list[dict[str, Any]]] = {}
    for span in spans.to_dicts():
        first = turn_at_or_after(span["first"], origin, step)
        if first <= min(span["last"], stop):
            due.setdefault(first, []).append(span)
    stored = turns = 0
    while due:
        at = min(due)
        waiting = due.pop(at)
        turn = job.decide_at(at, at)
        stored += turn.stored
        turns += 1
        rows = {(r["cluster"], r["job_id"]): r for r in turn.plan.to_dicts()}
        by_service: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for r in rows.values():
            by_service.setdefault((r["cluster"], r["service"]), []).append(r)
        for span in waiting:
            if span["kind"] == "job":
                options = [next_turn(rows.get((span["cluster"], span["key"])), at, origin, step)]
            else:
                options = [next_turn(r, at, origin, step) for r in by_service.get((span["cluster"], span["key"]), [])]
            later = min((t for t in options if t is not None), default=None)
            if later is not None and later <= min(span["last"], stop):
                due.setdefault(later, []).append(span)
    return Replayed(stored, turns, step)


@dataclass(frozen=True)
class Replayed:
    """A shadow replay's ledger lines stored, the turns it planned at, and its interval."""

    lines: int
    turns: int
    interval: timedelta


def _spans(wh: Warehouse, config: Config, start: datetime, end: datetime,
           lock: AbstractContextManager[object]) -> pl.DataFrame:
    """SPANS of the replay: when jobs (minute-based policies) or services (no_traffic) could be candidates."""
    by_minutes = [p.idle_for for p in config.reclaim.policies if p.when != "no_traffic"]
    by_traffic = [p.idle_for for p in config.reclaim.policies if p.when == "no_traffic"]
    read_from = start - lookback(config)
    parts = [pl.DataFrame(schema=SPANS)]
    with snapshot(wh, lock) as view:
        if by_minutes:
            # A Workload's pods' stretches carry the pods' labels; the plan names the job by its Workload.
            stretches = workload_minutes(
                idle_stretches(view, read_from, end, config.idle.util_below, config.idle.min_minutes),
                workload_records(view, read_from, end))
            parts.append(idle_spans(stretches, min(by_minutes)))
        if by_traffic:
            parts.append(quiet_spans(inference_windows(view, read_from, end), min(by_traffic), read_from))
    return pl.concat(parts)


def check_objection(wh: Warehouse, config: Config, actor: str, role: str | None, target: str) -> None:
    """An exemption (reclaim.exempt) is a lead's of the job's team (`reclaim.team_leads`) or an admin's; else 403."""
    if role in (None, "admin"):
        return  # the CLI at the host, or an admin
    cluster, _, job_id = target.partition("/")
    records = ledger.job_records(wh, cluster, job_id)
    if records.is_empty():
        raise ControlError(f"no job {job_id} on cluster {cluster!r} in the warehouse", status=404)
    team = str(classified_running_team(records, config))
    if actor not in config.reclaim.team_leads.get(team, []):
        raise ControlError(
            f"{actor} is not a lead of team {team} (reclaim.team_leads), whose job {job_id} this is; "
            "only its leads or an admin may exempt it",
            status=403,
        )


def classified_running_team(records: pl.DataFrame, config: Config) -> str:
    from gpusteward.attribution import classify_jobs

    return str(classify_jobs(config, records.sort("submit_time").tail(1))["team"][0])
