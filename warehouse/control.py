"""Control actions (approve/reject plans, silence/acknowledge alerts, trigger reviews): audited writes.

Every action is one row of `control_actions` (migration 006) with the caller's identity; the
state a dashboard shows (a plan's decision, an alert's silence) is derived from those rows, so the
audit trail and the state can never disagree.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import duckdb
import polars as pl

from gpusteward import tables
from gpusteward.tables import schema
from warehouse.sql import run, scalar, transaction
from warehouse.store import Warehouse

Action = Literal[
    "plan.approve", "plan.reject", "alert.silence", "alert.acknowledge", "review.trigger", "import.retry",
    "reclaim.exempt", "reclaim.approve", "reclaim.reject",
]
ACTIONS: tuple[Action, ...] = (
    "plan.approve", "plan.reject", "alert.silence", "alert.acknowledge", "review.trigger", "import.retry",
    "reclaim.exempt", "reclaim.approve", "reclaim.reject",
)

CONTROL_ACTIONS = schema(
    {
        "action_id": pl.Utf8,
        "acted_at": pl.Datetime("us"),
        "actor": pl.Utf8,
        "action": pl.Utf8,
        "target": pl.Utf8,
        "until_ts": pl.Datetime("us"),
        "reason": pl.Utf8,
        "override": pl.Utf8,  # plan.approve of a plan flagged by its replay: why it is approved anyway
        "via": pl.Utf8,  # the relaying token's identity when a proxy or the dashboard acted for `actor`
    }
)
PLAN_DECISIONS = schema(
    {"plan_id": pl.Utf8, "decision": pl.Utf8, "decided_by": pl.Utf8, "decided_at": pl.Datetime("us"),
     "override": pl.Utf8}
)
ALERT_STATES = schema(
    {
        "fingerprint": pl.Utf8,
        "silenced_until": pl.Datetime("us"),
        "silenced_by": pl.Utf8,
        "acknowledged_by": pl.Utf8,
        "acknowledged_at": pl.Datetime("us"),
    }
)


class ControlError(ValueError):
    """The action cannot be taken: `status` is the HTTP status that says why (404, 409)."""

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True)
class ActionRecord:
    action_id: str
    at: datetime
    actor: str
    action: Action
    target: str
    until: datetime | None = None
    reason: str | None = None
    override: str | None = None
    via: str | None = None


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _frame(wh: Warehouse, sql: str, target: pl.Schema) -> pl.DataFrame:
    try:
        frame = wh.connection.sql(sql).pl()  # same package: the warehouse lends its connection
    except duckdb.CatalogException:  # a read-only file from before migration 006: no actions yet
        return tables.empty(target)
    return tables.conform(frame, target) if frame.height else tables.empty(target)


def record(
    wh: Warehouse,
    actor: str,
    action: Action,
    target: str,
    *,
    at: datetime,
    until: datetime | None = None,
    reason: str | None = None,
    override: str | None = None,
    separation: bool = False,
    via: str | None = None,
) -> ActionRecord:
    """Check the action against the warehouse, then store it. Raises ControlError when it cannot be taken.

    `override`: the reason to approve a plan whose replay makes a protected objective worse (the plan
    body's `protected` list); such a plan is refused without one, and only plan.approve takes one.
    `separation`: separation of duties; whoever proposed or applied a plan cannot approve it. That
    refusal is itself stored in the audit trail (action `plan.approve.refused`), then raised (403).
    `via`: the identity of the token that relayed the request for `actor` (a sign-in proxy, the dashboard)."""
    if action not in ACTIONS:
        raise ControlError(f"unknown action {action!r}", status=400)
    if not actor:
        raise ControlError("an action needs the caller's identity", status=400)
    if override is not None and (action != "plan.approve" or not override.strip()):
        raise ControlError("an override is a non-empty reason, and only a plan's approval takes one", status=400)
    con = wh.connection
    if action in ("plan.approve", "plan.reject"):
        if not scalar(con, "SELECT count(*) FROM quota_plans WHERE plan_id = ?", [target]):
            raise ControlError(f"no quota plan {target!r}", status=404)
        decided = scalar(
            con,
            "SELECT action FROM control_actions WHERE target = ? AND action IN ('plan.approve', 'plan.reject')"
            " ORDER BY acted_at DESC LIMIT 1",
            [target],
        )
        if decided is not None:
            raise ControlError(f"plan {target!r} was already decided ({decided})", status=409)
        if action == "plan.approve" and separation:
            _separate_duties(con, actor, target, at=at, reason=reason, via=via)
        if action == "plan.approve" and override is None:
            _refuse_protected(con, target)
    elif action in ("alert.silence", "alert.acknowledge"):
        if not scalar(con, "SELECT count(*) FROM alerts WHERE fingerprint = ?", [target]):
            raise ControlError(f"no alert {target!r}", status=404)
        if action == "alert.silence" and (until is None or _naive(until) <= _naive(at)):
            raise ControlError("a silence needs an end in the future", status=400)
    elif action == "import.retry" and not scalar(
        con, "SELECT count(*) FROM quarantined_files WHERE path = ?", [target]
    ):
        raise ControlError(f"no quarantined file at {target!r} (`gpusteward status` lists them)", status=404)
    elif action == "reclaim.exempt":
        _check_job(con, target)
        if until is not None and _naive(until) <= _naive(at):
            raise ControlError("an exemption needs an end in the future (or none: for as long as the job runs)",
                               status=400)
    elif action in ("reclaim.approve", "reclaim.reject"):
        _check_awaiting(con, target)
    entry = ActionRecord(uuid.uuid4().hex, _naive(at), actor, action, target, _naive(until) if until else None, reason,
                         override, via)
    with transaction(con):
        run(
            con,
            "INSERT INTO control_actions (action_id, acted_at, actor, action, target, until_ts, reason, override, via)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [entry.action_id, entry.at, entry.actor, entry.action, entry.target, entry.until, entry.reason,
             entry.override, entry.via],
        )
        if action in ("reclaim.approve", "reclaim.reject"):
            # An approved action goes to the scheduler at the service's next turn; the approver is who decided it.
            state = "pending" if action == "reclaim.approve" else "rejected"
            run(con, "UPDATE reclaim_decisions SET state = ?, decided_by = ? WHERE decision_id = ?",
                [state, actor, target])
    return entry


def _check_job(con: duckdb.DuckDBPyConnection, target: str) -> None:
    cluster, _, job_id = target.partition("/")
    if "/" in job_id:  # a Kueue Workload, by its namespace/name (its record's job_ref)
        known = scalar(con, "SELECT count(*) FROM jobs WHERE cluster = ? AND job_ref = ?", [cluster, job_id])
    else:
        known = job_id.isdigit() and scalar(
            con, "SELECT count(*) FROM jobs WHERE cluster = ? AND job_id = ?", [cluster, int(job_id)])
    if not known:
        raise ControlError(f"no job {job_id or '?'} on cluster {cluster!r} in the warehouse", status=404)


def _check_awaiting(con: duckdb.DuckDBPyConnection, decision_id: str) -> None:
    found = run(con, "SELECT kind, state FROM reclaim_decisions WHERE decision_id = ?", [decision_id])
    if not found or found[0][0] != "action":
        raise ControlError(f"no reclaim action {decision_id!r}", status=404)
    if found[0][1] != "awaiting_approval":
        raise ControlError(f"reclaim action {decision_id!r} is not waiting for approval (it is {found[0][1]})",
                           status=409)


REFUSED_APPROVAL = "plan.approve.refused"  # an audit row only: never a decision, never in ACTIONS


def _plan_roles(con: duckdb.DuckDBPyConnection, plan_id: str) -> tuple[list[str], list[str]]:
    """Who proposed the plan (its body's `proposed_by`), and who applied it (quota_applies, not dry runs)."""
    body = scalar(con, "SELECT body FROM quota_plans WHERE plan_id = ?", [plan_id])
    proposed = (json.loads(body) if body else {}).get("proposed_by") or []
    try:
        applied = con.execute(
            "SELECT DISTINCT actor FROM quota_applies WHERE plan_id = ? AND action = 'apply' ORDER BY actor",
            [plan_id],
        ).fetchall()
    except duckdb.CatalogException:  # a file from before migration 007: nothing applied
        applied = []
    return [str(p) for p in proposed], [str(a[0]) for a in applied]


def _separate_duties(
    con: duckdb.DuckDBPyConnection, actor: str, plan_id: str, *, at: datetime, reason: str | None, via: str | None
) -> None:
    """Refuse (and record the refusal) when the approver proposed or applied the plan."""
    proposed, applied = _plan_roles(con, plan_id)
    roles = [word for word, who in (("proposed", proposed), ("applied", applied)) if actor in who]
    if not roles:
        return
    message = (
        f"separation of duties: {actor} {' and '.join(roles)} plan {plan_id!r}, so someone else must approve it "
        "(service.separation_of_duties)"
    )
    run(
        con,
        "INSERT INTO control_actions (action_id, acted_at, actor, action, target, until_ts, reason, override, via)"
        " VALUES (?, ?, ?, ?, ?, NULL, ?, NULL, ?)",
        [uuid.uuid4().hex, _naive(at), actor, REFUSED_APPROVAL, plan_id, f"{message}; their reason: {reason or '-'}",
         via],
    )
    raise ControlError(message, status=403)


def _refuse_protected(con: duckdb.DuckDBPyConnection, plan_id: str) -> None:
    """A plan whose replay makes protected objectives worse is approved only with an override."""
    body = scalar(con, "SELECT body FROM quota_plans WHERE plan_id = ?", [plan_id])
    flags = (json.loads(body) if body else {}).get("protected") or []
    if not flags:
        return
    worse = "; ".join(str(f.get("summary") or f.get("objective")) for f in flags)
    raise ControlError(
        f"plan {plan_id!r} makes {len(flags)} protected objective(s) worse in its replay ({worse}); "
        "approve it only with an override that says why: `gpusteward quota approve PLAN --override \"reason\"`, "
        "or {\"override\": \"reason\"} in the API call",
        status=409,
    )


def actions(wh: Warehouse) -> pl.DataFrame:
    """The audit trail, oldest first."""
    return _frame(wh, "SELECT * FROM control_actions ORDER BY acted_at, action_id", CONTROL_ACTIONS)


def plan_decisions(wh: Warehouse) -> pl.DataFrame:
    """The decision on each decided plan (approved | rejected), who took it and when."""
    sql = """
    SELECT target AS plan_id, CASE action WHEN 'plan.approve' THEN 'approved' ELSE 'rejected' END AS decision,
           actor AS decided_by, acted_at AS decided_at, override
    FROM control_actions WHERE action IN ('plan.approve', 'plan.reject')
    QUALIFY row_number() OVER (PARTITION BY target ORDER BY acted_at DESC, action_id) = 1
    ORDER BY plan_id
    """
    return _frame(wh, sql, PLAN_DECISIONS)


def alert_states(wh: Warehouse) -> pl.DataFrame:
    """Per alert fingerprint: the latest silence's end and author, and the first acknowledgement."""
    sql = """
    WITH s AS (
        SELECT target, until_ts, actor FROM control_actions WHERE action = 'alert.silence'
        QUALIFY row_number() OVER (PARTITION BY target ORDER BY acted_at DESC, action_id) = 1
    ), a AS (
        SELECT target, actor, acted_at FROM control_actions WHERE action = 'alert.acknowledge'
        QUALIFY row_number() OVER (PARTITION BY target ORDER BY acted_at, action_id) = 1
    )
    SELECT coalesce(s.target, a.target) AS fingerprint, s.until_ts AS silenced_until, s.actor AS silenced_by,
           a.actor AS acknowledged_by, a.acted_at AS acknowledged_at
    FROM s FULL OUTER JOIN a ON s.target = a.target ORDER BY fingerprint
    """
    return _frame(wh, sql, ALERT_STATES)
