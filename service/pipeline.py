"""The downstream stages wired together: evaluate -> alerts -> review -> quota plan."""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from alerts.model import Alert, alerts_from_episodes
from alerts.outbox import TickResult
from gpusteward.config import Config
from gpusteward.domain import Month
from quota.analysis import analyse, pending_reasons, plan_replay
from quota.plan import Plan
from quota.protected import protected_worse
from quota.recommender import recommend
from reports import Review, build_review, write_review
from service.alerting import run_alert_tick
from sla.account_rollup import account_rollup
from sla.common import classified_jobs, window_of
from sla.fairness import cluster_gpus
from sla.inputs import EvaluationInputs
from sla.month import evaluate_month
from sla.outputs import MonthOutputs, plan_protected_frame, plan_replay_frame
from warehouse import Warehouse
from warehouse.queries import Digester
from warehouse.quota_store import applied_changes, plan_body
from warehouse.showback import month_showback


def latest_month(wh: Warehouse, tz: str = "UTC") -> Month:
    """The newest month with data, as a month of `tz` (the pool's time zone)."""
    months = wh.data_months(tz)
    if not months:
        raise LookupError(f"{wh.path}: the warehouse holds no data yet (run `gpusteward import`)")
    return months[-1]


SERVICE_ACTOR = "gpusteward"
"""Who proposes the plans the service's own evaluation makes (a person's `quota plan` names them)."""


@dataclass(frozen=True)
class Assessment:
    """A month evaluated and its quota plan, computed from a read of the warehouse, not yet stored."""

    outputs: MonthOutputs
    plan: Plan


def evaluate(wh: Warehouse, config: Config, month: Month, *, proposed_by: str = SERVICE_ACTOR,
             now: datetime | None = None, digester: Digester | None = None) -> MonthOutputs:
    """Evaluate the month (its days in the pool's time zone), plan quota changes, and store both;
    return the month's outputs. The stored plan lists everyone who proposed it (the same changes
    proposed again keep the earlier proposers): with separation of duties none of them may approve it.
    `now`: the plan's creation time (default: the wall clock). `digester`: the month's minute digest
    computed elsewhere (Spark, docs/scale.md) instead of inside the warehouse."""
    return store_assessment(wh, assess(wh, config, month, now=now, digester=digester), proposed_by=proposed_by)


def assess(wh: Warehouse, config: Config, month: Month, *, now: datetime | None = None,
           digester: Digester | None = None) -> Assessment:
    """Evaluate the month and plan quota changes from `wh` (a snapshot view will do: it only reads)."""
    month = month.in_zone(config.timezone)
    inputs = wh.evaluation_inputs(month, idle=config.idle, digester=digester)
    outputs = evaluate_month(inputs, config)
    pending, tree, usage = wh.slurm_queue(month)
    plan = _plan(outputs, inputs, config, pending, tree, now=now)
    accounts = account_rollup(pending, tree, usage)
    outputs = dataclasses.replace(outputs, plan_items=plan.to_frame(), accounts=accounts,
                                  plan_replay=plan_replay_frame(plan.replay),
                                  plan_protected=plan_protected_frame(plan.protected))
    return Assessment(outputs, plan)


def store_assessment(
    wh: Warehouse, assessment: Assessment, *, proposed_by: str = SERVICE_ACTOR
) -> MonthOutputs:
    """Store an assessment's plan and month outputs (the service's `Evaluate` stores the outputs, tables only
    the evaluation writes, on a connection of their own without the write lock, and the plan under it)."""
    store_plan(wh, assessment, proposed_by=proposed_by)
    wh.store_month_outputs(assessment.outputs)
    return assessment.outputs


def store_plan(wh: Warehouse, assessment: Assessment, *, proposed_by: str = SERVICE_ACTOR) -> None:
    """Store an assessment's quota plan (a few rows; plans are also what control actions decide on), with
    everyone who proposed it: the earlier proposers of the same changes and `proposed_by`."""
    plan = assessment.plan
    earlier = (plan_body(wh, plan.id) or {}).get("proposed_by") or []
    proposers = [*earlier, *([proposed_by] if proposed_by not in earlier else [])]
    wh.store_plan(plan.id, assessment.outputs.month, plan.created_at, plan.status, dry_run=plan.dry_run,
                  body={**plan.to_dict(), "proposed_by": proposers}, items=plan.to_frame())


def _plan(outputs: MonthOutputs, inputs: EvaluationInputs, config: Config, pending: pl.DataFrame,
          tree: pl.DataFrame | None = None, *, now: datetime | None = None) -> Plan:
    # A plan's id is derived from the changes it proposes, so re-running on the same data gives the
    # same plan instead of a pile of copies (and float noise in the inputs cannot change it).
    window = window_of(inputs)
    # The scheduler's own pending reasons (squeue / slurmrestd snapshots) override the derived causes.
    analysis = analyse(classified_jobs(inputs, config), inputs.quota_snapshots, config, window.start, window.end,
                       capacity=cluster_gpus(config, inputs.gpus), reasons=pending_reasons(pending, window.start),
                       inventory=inputs.gpus, tree=tree)
    draft = recommend(analysis, outputs.results, config, "draft")
    proposed = {
        (r["cluster"], r["name"]): r["proposed_gpus"]
        for r in draft.filter(pl.col("kind") == "account").iter_rows(named=True)
    }
    replay = plan_replay(analysis, proposed)
    # A plan whose replay makes a protected objective worse is approved only with an override.
    protected = protected_worse(analysis, proposed, config)
    changes = draft.select("cluster", "kind", "name", "current_gpus", "proposed_gpus").sort("cluster", "kind", "name")
    digest = hashlib.sha256(f"{outputs.month}\n{changes.write_csv()}".encode()).hexdigest()[:10]
    plan_id = f"{outputs.month}-{digest}"
    items = draft.with_columns(pl.lit(plan_id).alias("plan_id"))
    created = now or datetime.now(UTC)
    return Plan.from_frame(plan_id, str(outputs.month), created, items, replay=replay, protected=protected)


@dataclass(frozen=True)
class AlertRun:
    alerts: list[Alert]
    new: int
    tick: TickResult


def alert_rows(alerts: Sequence[Alert]) -> list[dict[str, Any]]:
    """Alerts as the warehouse records them (one row per fingerprint and status)."""
    return [
        {
            "fingerprint": a.fingerprint,
            "status": a.status,
            "line": a.labels.get("line"),
            "subject": a.subject,
            "severity": a.labels.get("severity"),
            "starts_at": a.starts_at.astimezone(UTC).replace(tzinfo=None),
            "ends_at": a.ends_at.astimezone(UTC).replace(tzinfo=None) if a.ends_at else None,
            "summary": a.annotations.get("summary"),
            "body": a.to_dict(),
        }
        for a in alerts
    ]


def raise_alerts(wh: Warehouse, config: Config, month: Month, episodes: pl.DataFrame, now: datetime) -> AlertRun:
    """Turn the month's breach episodes into alerts, record them once, and pass them through the
    alert engine and the warehouse outbox to the receivers (each notification delivered once)."""
    data_end = wh.data_end() if episodes.height else None
    alerts = alerts_from_episodes(episodes, config, data_end=data_end)
    new = wh.record_alerts(month, alert_rows(alerts))
    return AlertRun(alerts, new, run_alert_tick(wh, config, alerts, now))


def reclaimed_in(wh: Warehouse, month: Month) -> pl.DataFrame:
    """The month's reclaim ledger lines and objections."""
    from warehouse.reclaim_ledger import month_lines

    return month_lines(wh, month.start, month.end)


HISTORY_MONTHS = 5
"""Earlier months the review compares against (its trend section)."""


def produce_review(
    wh: Warehouse, config: Config, month: Month, out_dir: Path, *, formats: Sequence[str], langs: Sequence[str]
) -> tuple[Review, list[Path]]:
    """Build the month's review (with the earlier evaluated months as history, and the applied quota
    changes for the follow-up of last month's) and write it."""
    history = [wh.month_outputs(m) for m in wh.months() if m < month][-HISTORY_MONTHS:]
    outputs = dataclasses.replace(wh.month_outputs(month), showback=month_showback(wh, month, config))
    review = build_review(outputs, config, history, applied_changes(wh), reclaimed_in(wh, month))
    paths = write_review(review, out_dir, formats=tuple(formats), langs=tuple(langs))  # type: ignore[arg-type]
    return review, paths


def write_reviews(
    wh: Warehouse, config: Config, month: Month, out_dir: Path, *, formats: Sequence[str], langs: Sequence[str]
) -> list[Path]:
    return produce_review(wh, config, month, out_dir, formats=formats, langs=langs)[1]
