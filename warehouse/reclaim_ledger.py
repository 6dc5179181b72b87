"""The reclaim ledger in the warehouse (migration 029): warnings and actions, objections and approvals.

A warning's line and its outbox items are stored in one transaction, so a crash leaves both or
neither; an action's line is stored before the scheduler is called and its outcome after (a line
left `pending` is sent again: the scheduler calls are idempotent). Objections and approvals are
control actions (warehouse.control), read here as the evaluator and the executor need them.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

import duckdb
import polars as pl

from gpusteward import tables
from gpusteward.reclaim_ledger import RECLAIM_DECISIONS, TAKEN
from sla.common import naive_utc
from sla.reclaim_inputs import EXEMPTED, RECENT_ACTIONS
from warehouse.outbox import Enqueueable, insert_items
from warehouse.sql import run, transaction, unregister
from warehouse.store import Warehouse

_COLUMNS = ", ".join(RECLAIM_DECISIONS)


def store_decisions(wh: Warehouse, lines: pl.DataFrame, outbox: Sequence[Enqueueable] = ()) -> int:
    """Add the lines whose id is new, and the warnings' outbox items, in one transaction; how many lines were new."""
    if lines.is_empty() and not outbox:
        return 0
    con = wh.connection
    frame = tables.conform(lines, RECLAIM_DECISIONS)
    con.register("_decisions", frame)
    try:
        with transaction(con):
            found = run(con, "SELECT count(*) FROM _decisions WHERE decision_id NOT IN"
                             " (SELECT decision_id FROM reclaim_decisions)")
            run(con, f"INSERT INTO reclaim_decisions ({_COLUMNS}) SELECT {_COLUMNS} FROM _decisions"  # noqa: S608
                     " WHERE decision_id NOT IN (SELECT decision_id FROM reclaim_decisions)")
            insert_items(con, outbox)
    finally:
        unregister(con, "_decisions")
    return int(found[0][0])


def record_outcome(
    wh: Warehouse, decision_id: str, state: str, *, at: datetime, transport: str | None = None,
    outcome: str | None = None, recovered: float | None = None, decided_by: str | None = None,
) -> None:
    """An action's outcome (or an approver's decision, with `decided_by`)."""
    run(
        wh.connection,
        "UPDATE reclaim_decisions SET state = ?, acted_at = ?, transport = coalesce(?, transport),"
        " outcome = coalesce(?, outcome), gpu_hours_recovered = coalesce(?, gpu_hours_recovered),"
        " decided_by = coalesce(?, decided_by) WHERE decision_id = ?",
        [state, naive_utc(at), transport, outcome, recovered, decided_by, decision_id],
    )


def note(wh: Warehouse, decision_id: str, outcome: str) -> None:
    """Why a pending action waits (held by the cap or the kill switch), without marking it acted on."""
    run(wh.connection, "UPDATE reclaim_decisions SET outcome = ? WHERE decision_id = ?", [outcome, decision_id])


def sent_per_cluster(wh: Warehouse, now: datetime, window: timedelta = timedelta(hours=1)) -> dict[str, int]:
    """Taking actions the scheduler was sent (done or failed) in the `window` before `now`, per cluster: what the
    per-hour cap counts when an action is about to be sent."""
    at = naive_utc(now)
    rows = run(
        wh.connection,
        "SELECT cluster, count(*) FROM reclaim_decisions WHERE kind = 'action' AND action <> 'notify'"
        " AND state IN ('done', 'failed') AND acted_at > ? AND acted_at <= ? GROUP BY cluster",
        [at - window, at],
    )
    return {str(cluster): int(n) for cluster, n in rows}


def decisions(wh: Warehouse, *, runs_from: datetime | None = None, start: datetime | None = None,
              end: datetime | None = None) -> pl.DataFrame:
    """Ledger lines (RECLAIM_DECISIONS), by decision time: those about runs that started at or after
    `runs_from`, and those decided in [start, end), when given."""
    where, params = ["TRUE"], []
    if runs_from is not None:
        where.append("run_start >= ?")
        params.append(naive_utc(runs_from))
    if start is not None:
        where.append("decided_at >= ?")
        params.append(naive_utc(start))
    if end is not None:
        where.append("decided_at < ?")
        params.append(naive_utc(end))
    sql = f"SELECT {_COLUMNS} FROM reclaim_decisions WHERE {' AND '.join(where)} ORDER BY decided_at, decision_id"  # noqa: S608
    return tables.conform(wh.query(sql, params), RECLAIM_DECISIONS)


def month_lines(wh: Warehouse, start: datetime, end: datetime) -> pl.DataFrame:
    """The ledger lines decided in [start, end), and the objections made then as lines of kind `objection`
    (team and scenario from the job's latest warning; null when it was never warned). Empty from a
    read-only file older than migration 029."""
    try:
        return _month_lines(wh, start, end)
    except duckdb.CatalogException:
        return tables.empty(RECLAIM_DECISIONS)


def _month_lines(wh: Warehouse, start: datetime, end: datetime) -> pl.DataFrame:
    lines = decisions(wh, start=start, end=end)
    frame = wh.query(
        "SELECT 'objection' AS kind, a.action_id AS decision_id, a.acted_at AS decided_at, a.actor AS decided_by,"
        " split_part(a.target, '/', 1) AS cluster,"
        " substr(a.target, length(split_part(a.target, '/', 1)) + 2) AS job_id,"
        " w.team, w.scenario, w.policy, coalesce(w.action, 'notify') AS action, coalesce(w.mode, 'auto') AS mode,"
        " 'objection' AS state FROM control_actions a LEFT JOIN ("
        "   SELECT cluster, job_id, arg_max(team, decided_at) AS team, arg_max(scenario, decided_at) AS scenario,"
        "          arg_max(policy, decided_at) AS policy, arg_max(action, decided_at) AS action,"
        "          arg_max(mode, decided_at) AS mode FROM reclaim_decisions WHERE kind = 'warning'"
        "   GROUP BY cluster, job_id) w ON w.cluster || '/' || w.job_id = a.target"
        " WHERE a.action = 'reclaim.exempt' AND a.acted_at >= ? AND a.acted_at < ?",
        [naive_utc(start), naive_utc(end)],
    )
    return pl.concat([lines, tables.conform(frame, RECLAIM_DECISIONS)])


def open_lines(wh: Warehouse) -> pl.DataFrame:
    """What is pending: warnings (sent or shadow) of running jobs not yet acted on or objected to, and
    actions waiting for an approver or for the scheduler. Empty from a file older than migration 029."""
    sql = (
        f"SELECT {_COLUMNS} FROM reclaim_decisions d WHERE"  # noqa: S608 - fixed text
        " (d.kind = 'action' AND d.state IN ('awaiting_approval', 'pending'))"
        " OR (d.kind = 'warning'"
        "  AND NOT EXISTS (SELECT 1 FROM reclaim_decisions a WHERE a.kind = 'action' AND a.warning_id = d.decision_id)"
        "  AND NOT EXISTS (SELECT 1 FROM control_actions c WHERE c.action = 'reclaim.exempt'"
        "                  AND c.target = d.cluster || '/' || d.job_id AND c.acted_at >= d.decided_at)"
        "  AND EXISTS (SELECT 1 FROM jobs j WHERE j.cluster = d.cluster AND CAST(j.job_id AS VARCHAR) = d.job_id"
        "              AND j.start_time = d.run_start AND j.end_time IS NULL))"
        " ORDER BY d.action_due, d.decision_id"
    )
    try:
        return tables.conform(wh.query(sql), RECLAIM_DECISIONS)
    except duckdb.CatalogException:
        return tables.empty(RECLAIM_DECISIONS)


def pending_actions(wh: Warehouse) -> pl.DataFrame:
    """Actions due to be sent to the scheduler (auto, approved, or retried after a transient failure)."""
    sql = f"SELECT {_COLUMNS} FROM reclaim_decisions WHERE kind = 'action' AND state = 'pending' ORDER BY decided_at"  # noqa: S608
    return tables.conform(wh.query(sql), RECLAIM_DECISIONS)


def job_records(wh: Warehouse, cluster: str, job_id: str) -> pl.DataFrame:
    """The JOBS records of one job (a requeued job has several): a Slurm job id, or a Kueue Workload's
    `namespace/name` (its record's `job_ref`)."""
    if "/" in job_id:
        frame = wh.query("SELECT * FROM jobs WHERE cluster = ? AND job_ref = ? ORDER BY submit_time", [cluster, job_id])
        return tables.conform(frame, tables.JOBS)
    if not job_id.isdigit():
        return tables.empty(tables.JOBS)
    frame = wh.query("SELECT * FROM jobs WHERE cluster = ? AND job_id = ? ORDER BY submit_time", [cluster, int(job_id)])
    return tables.conform(frame, tables.JOBS)


def decision(wh: Warehouse, decision_id: str) -> dict[str, object] | None:
    found = tables.conform(
        wh.query(f"SELECT {_COLUMNS} FROM reclaim_decisions WHERE decision_id = ?", [decision_id]),  # noqa: S608
        RECLAIM_DECISIONS,
    )
    return found.row(0, named=True) if found.height else None


def recent_actions(wh: Warehouse, now: datetime, window: timedelta = timedelta(hours=1)) -> pl.DataFrame:
    """RECENT_ACTIONS: the taking actions decided in the `window` before `now` (the per-hour cap counts them)."""
    placeholders = ", ".join("?" for _ in TAKEN)
    at = naive_utc(now)
    sql = (
        "SELECT cluster, decided_at AS at FROM reclaim_decisions WHERE kind = 'action'"  # noqa: S608 - fixed text
        f" AND action <> 'notify' AND state IN ({placeholders}) AND decided_at > ? AND decided_at <= ?"
    )
    frame = wh.query(sql, [*TAKEN, at - window, at])
    return tables.conform(frame, RECENT_ACTIONS)


def exemptions(wh: Warehouse) -> pl.DataFrame:
    """EXEMPTED: every objection (control action reclaim.exempt) with its end; the evaluator keeps the live ones."""
    frame = wh.query(
        "SELECT split_part(target, '/', 1) AS cluster, substr(target, length(split_part(target, '/', 1)) + 2)"
        " AS job_id, until_ts AS until, actor AS by FROM control_actions WHERE action = 'reclaim.exempt'"
        " ORDER BY acted_at"
    )
    return tables.conform(frame, EXEMPTED)


def approvals(wh: Warehouse) -> dict[str, tuple[str, str]]:
    """decision id -> (reclaim.approve | reclaim.reject, who) of every decided approval."""
    rows = run(
        wh.connection,
        "SELECT target, action, actor FROM control_actions WHERE action IN ('reclaim.approve', 'reclaim.reject')"
        " ORDER BY acted_at",
    )
    return {str(t): (str(a), str(who)) for t, a, who in rows}
