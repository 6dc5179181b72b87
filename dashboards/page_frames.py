"""Pure builders for the pages after the overview: display frames with translated headers, None when no data."""

from __future__ import annotations

import json
from typing import Any

import polars as pl

from dashboards.frames import budget_text, status, verdict
from dashboards.texts import Texts
from dashboards.view import View
from reports.context import indicator_bound, indicator_kind
from reports.data_text import evidence_text
from reports.model import Quantity
from reports.plan_text import render
from sla.idle import idle_by_submission


def _value(tx: Texts, indicator: str, value: object) -> str:
    return tx.fmt.quantity(Quantity(value if isinstance(value, int | float) else None, indicator_kind(indicator)))


def _objective(tx: Texts, indicator: str, value: object) -> str:
    if not isinstance(value, int | float):
        return "—"
    return tx.fmt.quantity(Quantity(value, indicator_kind(indicator), indicator_bound(indicator)))


def scenario_summary(view: View) -> pl.DataFrame | None:
    """Per scenario: results judged, met, missed, and the smallest error budget left."""
    results = view.outputs.results
    if results.is_empty():
        return None
    tx = view.tx
    grouped = (
        results.group_by("scenario")
        .agg(
            pl.col("met").is_not_null().sum().alias("judged"),
            pl.col("met").eq(True).sum().alias("met"),
            pl.col("met").eq(False).sum().alias("missed"),
            pl.col("budget_left").min().alias("budget"),
        )
        .sort("scenario")
    )
    return pl.DataFrame({
        tx("col.scenario"): [tx.fmt.term("scenario", s) for s in grouped["scenario"].to_list()],
        tx("col.judged"): grouped["judged"].cast(pl.Int64),
        tx("col.met"): grouped["met"].cast(pl.Int64),
        tx("col.missed"): grouped["missed"].cast(pl.Int64),
        tx("col.budget_left"): [tx.fmt.quantity(Quantity(b, "percent")) for b in grouped["budget"].to_list()],
    })


def results_table(view: View, results: pl.DataFrame, *, subject_label: str = "col.subject",
                  keep_order: bool = False) -> pl.DataFrame | None:
    if results.is_empty():
        return None
    tx = view.tx
    rows = (results if keep_order else results.sort(["subject", "indicator"])).to_dicts()
    return pl.DataFrame({
        tx("col.status"): [status(r, tx) for r in rows],
        tx(subject_label): [view.team_name(r["subject"]) if r["subject_kind"] == "team" else str(r["subject"])
                            for r in rows],
        tx("col.indicator"): [tx.fmt.term("indicator", r["indicator"]) for r in rows],
        tx("col.value"): [_value(tx, r["indicator"], r["value"]) for r in rows],
        tx("col.objective"): [_objective(tx, r["indicator"], r["objective"]) for r in rows],
        tx("col.budget_left"): [budget_text(r, tx) for r in rows],
        tx("col.completeness"): [tx.fmt.quantity(Quantity(r["completeness"], "percent")) for r in rows],
        tx("col.evidence"): [evidence_text(r["evidence"], tx.fmt) for r in rows],
    })


def needing_attention(results: pl.DataFrame) -> pl.DataFrame:
    """The results missed or at risk (dashboards.frames.verdict), misses first."""
    rows = [(0 if verdict(r) == "missed" else 1, r) for r in results.iter_rows(named=True)
            if verdict(r) in ("missed", "at_risk")]
    rows.sort(key=lambda pair: (pair[0], str(pair[1]["subject"]), str(pair[1]["indicator"])))
    return pl.DataFrame([r for _, r in rows], schema=results.schema)


def share_table(view: View) -> pl.DataFrame | None:
    """GPU-hours per team against the team's entitled share of the (filtered) pool's GPU-hours."""
    usage = view.outputs.usage
    if usage.is_empty():
        return None
    tx = view.tx
    total = float(view.model.month_outputs(view.month).usage["gpu_hours"].sum())
    grouped = usage.group_by("team").agg(pl.col("gpu_hours").sum(), pl.col("jobs").sum()).sort("team")
    rows = grouped.to_dicts()
    entitled = {k: t.entitled_share for k, t in view.config.teams.items()}
    return pl.DataFrame({
        tx("col.team"): [view.team_name(r["team"]) for r in rows],
        tx("col.gpu_hours"): [round(float(r["gpu_hours"] or 0), 1) for r in rows],
        tx("col.jobs"): [int(r["jobs"] or 0) for r in rows],
        tx("col.share"): [tx.fmt.quantity(Quantity(float(r["gpu_hours"] or 0) / total if total else None, "percent"))
                          for r in rows],
        tx("col.entitled"): [tx.fmt.quantity(Quantity(entitled.get(str(r["team"])), "percent")) for r in rows],
    })


def quota_history(view: View) -> pl.DataFrame | None:
    """Every stored plan's proposed changes for the filtered teams, with the decision taken on the plan."""
    plans = view.model.plans()
    if plans.is_empty():
        return None
    tx = view.tx
    rows: list[dict[str, Any]] = []
    for plan in plans.sort("created_at").iter_rows(named=True):
        for item in json.loads(plan["body"]).get("items", []):
            if view.filters.teams and item.get("team") not in view.filters.teams:
                continue
            rows.append({
                tx("col.month"): plan["month"],
                tx("col.plan"): plan["plan_id"],
                tx("col.team"): view.team_name(item.get("team")),
                tx("col.cluster"): str(item.get("cluster") or ""),
                tx("col.current"): str(item.get("current_gpus") if item.get("current_gpus") is not None else "—"),
                tx("col.proposed"): str(item.get("proposed_gpus") if item.get("proposed_gpus") is not None else "—"),
                tx("col.decision"): tx(f"plan.decision.{plan.get('decision') or 'proposed'}"),
            })
    return pl.DataFrame(rows) if rows else None


def services_table(view: View) -> pl.DataFrame | None:
    """One row per inference service: latency p95/p99 and error rate against objectives, and the headroom."""
    results = view.outputs.results.filter(pl.col("subject_kind") == "service")
    if results.is_empty():
        return None
    tx = view.tx
    out: list[dict[str, Any]] = []
    for r in results.sort(["subject", "indicator"]).iter_rows(named=True):
        headroom = None
        if isinstance(r["value"], int | float) and isinstance(r["objective"], int | float) and r["objective"]:
            headroom = 1 - r["value"] / r["objective"] if indicator_bound(r["indicator"]) != "at_least" else (
                r["value"] / r["objective"] - 1)
        out.append({
            tx("col.status"): status(r, tx),
            tx("col.service"): str(r["subject"]),
            tx("col.indicator"): tx.fmt.term("indicator", r["indicator"]),
            tx("col.value"): _value(tx, r["indicator"], r["value"]),
            tx("col.objective"): _objective(tx, r["indicator"], r["objective"]),
            tx("col.headroom"): tx.fmt.quantity(Quantity(headroom, "percent")),
        })
    return pl.DataFrame(out)


def idle_teams(view: View) -> pl.DataFrame | None:
    idle = view.outputs.idle
    if idle.is_empty():
        return None
    tx = view.tx
    g = (
        idle.group_by("team")
        .agg(pl.col(c).sum() for c in ("busy_minutes", "idle_minutes", "idle_held_minutes", "no_data_minutes"))
        # Ties (teams holding no idle GPU) in the teams' order, not group_by's, which changes from run to run.
        .sort(["idle_held_minutes", "idle_minutes", "team"], descending=[True, True, False])
    )
    return pl.DataFrame({
        tx("col.team"): [view.team_name(t) for t in g["team"].to_list()],
        tx("col.busy"): (g["busy_minutes"] / 60).round(1),
        tx("col.idle"): (g["idle_minutes"] / 60).round(1),
        tx("col.idle_held"): (g["idle_held_minutes"] / 60).round(1),
        tx("col.no_data"): (g["no_data_minutes"] / 60).round(1),
    })


def idle_jobs(view: View, limit: int = 20) -> pl.DataFrame | None:
    """The jobs holding idle GPUs longest (idle-held first): who to ask to release them. An array's
    tasks are one row, named as Slurm names them (`123_[1-3]`; a lone task `123_4`)."""
    idle = idle_by_submission(view.outputs.idle).filter(pl.col("wasted") > 0)
    if idle.is_empty():
        return None
    tx = view.tx
    top = idle.sort(["idle_held_minutes", "idle_minutes", "job"], descending=[True, True, False]).head(limit)
    return pl.DataFrame({
        tx("col.cluster"): top["cluster"],
        tx("col.job"): top["job"],
        tx("col.tasks"): top["tasks"],
        tx("col.team"): [view.team_name(t) for t in top["team"].to_list()],
        tx("col.scenario"): [tx.fmt.term("scenario", s) for s in top["scenario"].to_list()],
        tx("col.idle_held"): (top["idle_held_minutes"] / 60).round(1),
        tx("col.idle"): (top["idle_minutes"] / 60).round(1),
        tx("col.no_data"): (top["no_data_minutes"] / 60).round(1),
    })


def arrays_table(view: View, limit: int = 50) -> pl.DataFrame | None:
    """Job arrays of the month, one row per array (most tasks first): tasks, outcomes and waits."""
    arrays = view.outputs.arrays
    if arrays.is_empty():
        return None
    tx = view.tx
    top = arrays.head(limit)

    def duration(column: str) -> list[str]:
        return [tx.fmt.quantity(Quantity(v, "duration")) for v in top[column].to_list()]

    return pl.DataFrame({
        tx("col.array"): [f"{a}_[…]" for a in top["array_job_id"].to_list()],
        tx("col.job_name"): top["name"].fill_null("?"),
        tx("col.queue"): top["queue"],
        tx("col.team"): [view.team_name(t) for t in top["team"].to_list()],
        tx("col.tasks"): top["tasks"],
        tx("col.completed"): top["completed"],
        tx("col.failed"): top["failed"],
        tx("col.cancelled"): top["cancelled"],
        tx("col.other_outcome"): top["other"],
        tx("col.p50"): duration("wait_p50_s"),
        tx("col.longest"): duration("wait_max_s"),
        tx("col.longest_wait_task"): top["longest_wait_task"].fill_null("—"),
    })


def latest_alerts(view: View) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The latest record of each of the month's alerts: those whose latest status is "firing", and the rest
    (resolved)."""
    latest = view.alerts().sort("recorded_at").group_by("fingerprint", maintain_order=True).last()
    firing = pl.col("status") == "firing"
    return latest.filter(firing), latest.filter(~firing)


def alerts_table(view: View, latest: pl.DataFrame) -> pl.DataFrame | None:
    """Alerts (`latest`: their latest records, from `latest_alerts`), one row per fingerprint, with silence and
    acknowledgement; None when there are none."""
    if latest.is_empty():
        return None
    tx = view.tx
    states = view.model.alert_states()
    joined = latest.join(states, on="fingerprint", how="left").sort(["starts_at", "fingerprint"],
                                                                    descending=[True, False])
    rows = joined.to_dicts()
    return pl.DataFrame({
        tx("col.status"): [tx(f"alert.status.{r['status']}") for r in rows],
        tx("col.severity"): [tx.fmt.term("severity", r["severity"]) for r in rows],
        tx("col.line"): [tx.fmt.term("line", r["line"]) for r in rows],
        tx("col.subject"): [str(r["subject"] or "—") for r in rows],
        tx("col.since", zone=tx.zone): [tx.fmt.moment(r["starts_at"]) for r in rows],
        tx("col.silenced_until", zone=tx.zone): [
            tx.fmt.moment(r["silenced_until"]) if r["silenced_until"] else "—" for r in rows
        ],
        tx("col.acknowledged_by"): [str(r["acknowledged_by"] or "—") for r in rows],
        tx("col.fingerprint"): [str(r["fingerprint"])[:12] for r in rows],
    })


def resolved_summary(view: View, resolved: pl.DataFrame) -> pl.DataFrame | None:
    """Resolved alerts (their latest records) by protection line and severity, most first: how many, on which
    subjects, when the first began and when the last ended; None when there are none."""
    if resolved.is_empty():
        return None
    tx = view.tx
    rows = resolved.group_by("line", "severity").agg(
        pl.len().alias("alerts"),
        pl.col("subject").drop_nulls().unique().sort().alias("subjects"),
        pl.col("starts_at").min().alias("first"),
        pl.col("ends_at").max().alias("last"),
    ).sort(["alerts", "line", "severity"], descending=[True, False, False]).to_dicts()
    return pl.DataFrame({
        tx("col.line"): [tx.fmt.term("line", r["line"]) for r in rows],
        tx("col.severity"): [tx.fmt.term("severity", r["severity"]) for r in rows],
        tx("col.alerts"): [tx.fmt.number(r["alerts"]) for r in rows],
        tx("col.subjects"): [", ".join(r["subjects"]) or "—" for r in rows],
        tx("col.first_began", zone=tx.zone): [tx.fmt.moment(r["first"]) for r in rows],
        tx("col.last_resolved", zone=tx.zone): [tx.fmt.moment(r["last"]) for r in rows],
    })


def plans_table(view: View) -> pl.DataFrame | None:
    plans = view.model.plans(view.month)
    if plans.is_empty():
        return None
    tx = view.tx
    rows = plans.sort("created_at", descending=True).to_dicts()
    return pl.DataFrame({
        tx("col.plan"): [r["plan_id"] for r in rows],
        tx("col.created", zone=tx.zone): [tx.fmt.moment(r["created_at"]) for r in rows],
        tx("col.items"): [len(json.loads(r["body"]).get("items", [])) for r in rows],
        tx("col.decision"): [tx(f"plan.decision.{r.get('decision') or 'proposed'}") for r in rows],
        tx("col.decided_by"): [str(r.get("decided_by") or "—") for r in rows],
    })


def plan_items_table(view: View, plan_id: str) -> pl.DataFrame | None:
    plans = view.model.plans().filter(pl.col("plan_id") == plan_id)
    if plans.is_empty():
        return None
    tx = view.tx
    items = json.loads(plans.row(0, named=True)["body"]).get("items", [])
    if view.filters.teams:
        items = [i for i in items if i.get("team") in view.filters.teams]
    if not items:
        return None
    return pl.DataFrame({
        tx("col.team"): [view.team_name(i.get("team")) for i in items],
        tx("col.cluster"): [str(i.get("cluster") or "") for i in items],
        tx("col.current"): [str(i.get("current_gpus") if i.get("current_gpus") is not None else "—") for i in items],
        tx("col.proposed"): [str(i.get("proposed_gpus") if i.get("proposed_gpus") is not None else "—")
                             for i in items],
        tx("col.reason"): [render(i.get("reason"), tx.fmt) for i in items],
        tx("col.expected_effect"): [render(i.get("expected_effect"), tx.fmt) for i in items],
    })


def reclaim_pending_table(view: View) -> pl.DataFrame | None:
    """Reclaim warnings not yet acted on and actions still waiting, soonest due first (the read model's)."""
    lines = view.model.reclaim_pending()
    if view.filters.clusters:
        lines = lines.filter(pl.col("cluster").is_in(list(view.filters.clusters)))
    if view.filters.teams:
        lines = lines.filter(pl.col("team").is_in(list(view.filters.teams)))
    if lines.is_empty():
        return None
    tx = view.tx
    rows = lines.to_dicts()
    return pl.DataFrame({
        tx("col.reclaim_waiting_for"): [tx(f"reclaim.waiting.{r['kind']}.{r['state']}") for r in rows],
        tx("col.cluster"): [str(r["cluster"]) for r in rows],
        tx("col.reclaim_job"): [str(r["job"] or r["job_id"]) for r in rows],
        tx("col.team"): [str(r["team"] or "—") for r in rows],
        tx("col.reclaim_user"): [str(r["user_name"] or "—") for r in rows],
        tx("col.reclaim_gpus"): [tx.fmt.number(r["gpus"] or 0) for r in rows],
        tx("col.reclaim_idle_since", zone=tx.zone): [tx.fmt.moment(r["idle_since"]) for r in rows],
        tx("col.reclaim_due", zone=tx.zone): [tx.fmt.moment(r["action_due"]) for r in rows],
        tx("col.reclaim_policy"): [f"{r['policy']} ({r['action']}, {r['mode']})" for r in rows],
        tx("col.reclaim_decision"): [str(r["decision_id"]) for r in rows],
    })
