"""Named, typed queries. Each returns polars frames in the contracts' schemas."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import duckdb
import polars as pl

from gpusteward import evidence, tables
from gpusteward.config.schema import IdleConfig
from gpusteward.domain import Month
from gpusteward.tables import schema
from sla import results
from sla.common import Window, window_of
from sla.inputs import GPU_INVENTORY, EvaluationInputs
from sla.minute_digest import MinuteDigest
from sla.outputs import MonthOutputs, plan_protected_frame, plan_replay_frame
from warehouse.daily import month_accounts, month_arrays, month_daily_usage, month_failures
from warehouse.ledger import month_gpu_states, month_ledger
from warehouse.minute_chunks import DigestEngine, month_digest
from warehouse.sql import run, scalar

Digester = Callable[[Window], MinuteDigest]
"""Computes the digest of the evaluation's window elsewhere (warehouse.digest.spark_digest)."""

USER_TABLES = (
    "gpus",
    "gpu_identities",
    "gpu_identity_changes",
    "gpu_minutes",
    "jobs",
    "job_events",
    "inference_windows",
    "quota_snapshots",
    "quota_usage",
    "account_tree",
    "pending_jobs",
    "import_runs",
    "sla_results",
    "idle_by_job",
    "breach_episodes",
    "usage",
    "completeness",
    "quota_plans",
    "quota_plan_items",
    "alerts",
    "ledger",
    "gpu_states",
    "daily_usage",
    "failures",
    "month_arrays",
    "month_accounts",
)
_TIME_COLUMN = {
    "gpu_minutes": "ts",
    "jobs": "submit_time",
    "job_events": "ts",
    "inference_windows": "ts",
    "quota_snapshots": "ts",
    "quota_usage": "ts",
}


# `gpu_minutes` is a view over the packed `gpu_minute_rows` (migration 011): counts, first and
# last minutes read the base table, whose statistics answer them without a scan.
_STORED = {"gpu_minutes": "gpu_minute_rows"}
GPU_MINUTE_SPAN = (
    "SELECT make_timestamp(min(minute) * 60000000::BIGINT) AS first,"
    " make_timestamp(max(minute) * 60000000::BIGINT) AS last FROM gpu_minute_rows"
)


def count(con: duckdb.DuckDBPyConnection, table: str) -> int:
    if table not in USER_TABLES:
        raise ValueError(f"unknown table {table!r}")
    return int(scalar(con, f'SELECT count(*) FROM "{_STORED.get(table, table)}"'))  # noqa: S608 - checked above


def _frame(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any], schema: pl.Schema) -> pl.DataFrame:
    frame = con.sql(sql, params=params or None).pl()
    return tables.conform(frame, schema) if frame.height else tables.empty(schema)


def _bounds(month: Month) -> list[datetime]:
    return [month.start.replace(tzinfo=None), month.end.replace(tzinfo=None)]


def evaluation_inputs(
    con: duckdb.DuckDBPyConnection,
    month: Month,
    *,
    idle: IdleConfig | None = None,
    chunk_rows: int | None = None,
    engine: DigestEngine = "duckdb",
    digester: Digester | None = None,
) -> EvaluationInputs:
    """The month's inputs. With `idle`, the GPU-minutes come digested (by `engine`, a chunk of hosts at
    a time, so memory does not grow with the fleet; or by `digester`, given the evaluation's window,
    for example Spark over an export) and `gpu_minutes` is empty; without, they come whole."""
    lo, hi = _bounds(month)
    jobs = month_jobs(con, month)
    events = _frame(
        con,
        "SELECT e.* FROM job_events e SEMI JOIN ("
        "  SELECT cluster, job_id FROM jobs WHERE submit_time < ? AND (end_time IS NULL OR end_time >= ?)"
        ") j USING (cluster, job_id) ORDER BY e.cluster, e.job_id, e.ts",
        [hi, lo],
        tables.JOB_EVENTS,
    )
    minutes = tables.empty(tables.GPU_MINUTES) if idle is not None else _frame(
        con,
        # uuid and model_name are per GPU (in `gpus`): repeating them on every minute would make
        # them half of the month's frame in memory, and the evaluation reads them from `gpus`. A MIG
        # instance's rows carry its profile and model, the digest's share of the card (sla.minute_digest).
        "SELECT g.cluster, g.host, g.gpu, NULL::VARCHAR AS uuid,"
        " CASE WHEN g.mig_profile IS NOT NULL THEN g.model_name END AS model_name, g.mig_profile,"
        " m.* EXCLUDE (gpu_key)"
        " FROM gpu_minutes m JOIN gpus g USING (gpu_key) WHERE m.ts >= ? AND m.ts < ?"
        " ORDER BY g.cluster, g.host, g.gpu, m.ts",
        [lo, hi],
        tables.GPU_MINUTES,
    )
    windows = _frame(
        con,
        "SELECT * FROM inference_windows WHERE ts > ? AND ts <= ? ORDER BY cluster, service, instance, ts",
        [lo, hi],
        tables.INFERENCE_WINDOWS,
    )
    quotas = _frame(con, "SELECT * FROM quota_snapshots WHERE ts < ? ORDER BY ts", [hi], tables.QUOTA_SNAPSHOTS)
    # Each GPU as it was in the month: the identity in force at its end (gpu_identities), not a
    # later card's, which `gpus` holds once a card was swapped.
    gpus = _frame(
        con,
        "SELECT g.cluster, g.host, g.gpu, coalesce(i.uuid, g.uuid) AS uuid,"
        " coalesce(i.model_name, g.model_name) AS model_name, g.first_seen, g.last_seen, g.share, g.card_gpu,"
        " g.mig_profile"
        " FROM gpus g LEFT JOIN (SELECT gpu_key, arg_max(uuid, valid_from) AS uuid,"
        " arg_max(model_name, valid_from) AS model_name FROM gpu_identities WHERE valid_from < ? GROUP BY gpu_key) i"
        " USING (gpu_key) ORDER BY g.cluster, g.host, g.gpu",
        [hi],
        GPU_INVENTORY,
    )
    inputs = EvaluationInputs(month, jobs, events, minutes, windows, quotas, gpus, data_end(con))
    if idle is None:
        return inputs
    window = window_of(inputs)
    if digester is not None:
        digest = digester(window)
        if digest.window != window or digest.idle != idle:
            raise ValueError(
                f"the digest handed in covers {digest.window} with {digest.idle}, "
                f"not the evaluation's {window} with {idle}"
            )
        return replace(inputs, minute_digest=digest)
    return replace(inputs, minute_digest=month_digest(con, window, idle, chunk_rows, engine))


def month_jobs(con: duckdb.DuckDBPyConnection, month: Month) -> pl.DataFrame:
    """JOBS records that overlap `month`: submitted before its end and not ended before its start."""
    lo, hi = _bounds(month)
    return _frame(
        con,
        "SELECT * FROM jobs WHERE submit_time < ? AND (end_time IS NULL OR end_time >= ?)"
        " ORDER BY cluster, job_id, submit_time",
        [hi, lo],
        tables.JOBS,
    )


def slurm_queue(con: duckdb.DuckDBPyConnection, month: Month) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """(PENDING_JOBS, ACCOUNT_TREE, QUOTA_USAGE) of the month: the pending snapshots with their
    reasons, the account trees and the usage at the same times, for `sla.account_limits`."""
    lo, hi = _bounds(month)
    span = [lo, hi]
    pending = _frame(con, "SELECT * FROM pending_jobs WHERE ts >= ? AND ts < ? ORDER BY cluster, ts, job_id",
                     span, tables.PENDING_JOBS)
    tree = _frame(con, "SELECT * FROM account_tree WHERE ts < ? ORDER BY cluster, ts, account", [hi],
                  tables.ACCOUNT_TREE)
    usage = _frame(con, "SELECT * FROM quota_usage WHERE ts >= ? AND ts < ? ORDER BY cluster, ts, kind, name",
                   span, tables.QUOTA_USAGE)
    return pending, tree, usage


def data_end(con: duckdb.DuckDBPyConnection) -> datetime | None:
    """The minute after the last GPU-minute stored (None while there is none)."""
    last = scalar(con, f"SELECT last FROM ({GPU_MINUTE_SPAN})")  # noqa: S608 - fixed SQL
    return last + timedelta(minutes=1) if last is not None else None


def completeness(con: duckdb.DuckDBPyConnection, month: Month) -> pl.DataFrame:
    """Expected vs present GPU-minutes per cluster in the month, and the largest gap.

    Expected minutes run from the month's start (or a GPU's first sample) to the month's end (or
    the cluster's last sample): a GPU that never answered in the month is all missing.
    """
    lo, hi = _bounds(month)
    sql = """
    WITH span AS (
        SELECT g.cluster, greatest(min(m.ts), ?) AS lo, least(max(m.ts) + INTERVAL 1 MINUTE, ?) AS hi
        FROM gpu_minutes m JOIN gpus g USING (gpu_key) WHERE m.ts >= ? AND m.ts < ? GROUP BY g.cluster
    ),
    inventory AS (
        SELECT g.gpu_key, g.cluster, g.host,
               greatest(s.lo, date_trunc('minute', g.first_seen)) AS lo, s.hi
        FROM gpus g JOIN span s USING (cluster)
        WHERE g.first_seen < s.hi AND g.last_seen >= s.lo
    ),
    present AS (
        SELECT gpu_key, count(*) AS n FROM gpu_minutes WHERE ts >= ? AND ts < ? GROUP BY gpu_key
    ),
    per_gpu AS (
        SELECT i.cluster, i.host, i.gpu_key,
               greatest(date_diff('minute', i.lo, i.hi), 0) AS expected, coalesce(p.n, 0) AS present
        FROM inventory i LEFT JOIN present p USING (gpu_key)
    ),
    gaps AS (
        SELECT g.cluster, g.host, prev + INTERVAL 1 MINUTE AS gap_start, ts AS gap_end,
               date_diff('minute', prev, ts) - 1 AS gap_minutes
        FROM (SELECT gpu_key, ts, lag(ts) OVER (PARTITION BY gpu_key ORDER BY ts) AS prev
              FROM gpu_minutes WHERE ts >= ? AND ts < ?) m
        JOIN gpus g USING (gpu_key)
        WHERE prev IS NOT NULL AND date_diff('minute', prev, ts) > 1
    ),
    worst AS (
        SELECT cluster, host, gap_start, gap_end, gap_minutes, count(*) AS gpus,
               row_number() OVER (PARTITION BY cluster ORDER BY sum(gap_minutes) DESC, host) AS rn
        FROM gaps GROUP BY cluster, host, gap_start, gap_end, gap_minutes
    )
    SELECT 'gpu_minutes' AS source, p.cluster, sum(p.expected)::BIGINT AS expected,
           sum(least(p.present, p.expected))::BIGINT AS present,
           (sum(p.expected) - sum(least(p.present, p.expected)))::BIGINT AS missing,
           any_value(w.host) AS host, any_value(w.gpus) AS gpus, any_value(w.gap_start) AS gap_start,
           any_value(w.gap_end) AS gap_end, any_value(w.gap_minutes) AS gap_minutes
    FROM per_gpu p LEFT JOIN (SELECT * FROM worst WHERE rn = 1) w USING (cluster)
    GROUP BY p.cluster ORDER BY p.cluster
    """
    params = [lo, hi, lo, hi, lo, hi, lo, hi]
    rows = []
    for r in con.sql(sql, params=params).pl().iter_rows(named=True):
        detail = None if r["host"] is None else evidence.encode([evidence.part(
            "host_gap", host=str(r["host"]), gpus=evidence.gpus(r["gpus"]), start=r["gap_start"], end=r["gap_end"],
            lasted=evidence.duration(float(r["gap_minutes"]) * 60.0),
        )])
        rows.append({name: r.get(name) for name in results.COMPLETENESS if name != "detail"} | {"detail": detail})
    return pl.DataFrame(rows, schema=results.COMPLETENESS)


def _month_frame(con: duckdb.DuckDBPyConnection, table: str, month: Month, schema: pl.Schema) -> pl.DataFrame:
    return _frame(con, f'SELECT * EXCLUDE (month) FROM "{table}" WHERE month = ?', [str(month)], schema)  # noqa: S608


def month_episodes(con: duckdb.DuckDBPyConnection, month: Month) -> pl.DataFrame:
    return _month_frame(con, "breach_episodes", month, results.BREACH_EPISODES)


def month_outputs(con: duckdb.DuckDBPyConnection, month: Month) -> MonthOutputs:
    plan_row = run(
        con, "SELECT plan_id, body FROM quota_plans WHERE month = ? ORDER BY created_at DESC LIMIT 1", [str(month)]
    )
    plan_items = (
        _frame(con, "SELECT * FROM quota_plan_items WHERE plan_id = ?", [plan_row[0][0]], results.QUOTA_PLAN_ITEMS)
        if plan_row
        else tables.empty(results.QUOTA_PLAN_ITEMS)
    )
    sla = _frame(con, "SELECT * FROM sla_results WHERE month = ?", [str(month)], results.SLA_RESULTS)
    return MonthOutputs(
        month=month,
        results=sla,
        idle=_month_frame(con, "idle_by_job", month, results.IDLE_BY_JOB),
        episodes=month_episodes(con, month),
        usage=_month_frame(con, "usage", month, results.USAGE),
        completeness=_month_frame(con, "completeness", month, results.COMPLETENESS),
        plan_items=plan_items,
        ledger=month_ledger(con, month),
        gpu_states=month_gpu_states(con, month),
        daily_usage=month_daily_usage(con, month),
        failures=month_failures(con, month),
        arrays=month_arrays(con, month),
        accounts=month_accounts(con, month),
        plan_replay=plan_replay_frame(replay_rows(plan_row[0][1]) if plan_row else ()),
        plan_protected=plan_protected_frame(replay_rows(plan_row[0][1], "protected") if plan_row else ()),
    )


def replay_rows(body: str | None, part: str = "replay") -> list[dict[str, Any]]:
    """The `replay` rows (or another list, `protected`) of a stored plan's body; none in a plan stored
    before plans had them."""
    data = json.loads(body) if body else {}
    rows = data.get(part) if isinstance(data, dict) else None
    return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def output_months(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r[0] for r in run(con, "SELECT DISTINCT month FROM sla_results ORDER BY month")]


def data_months(con: duckdb.DuckDBPyConnection, tz: str = "UTC") -> list[str]:
    """Every month from the first to the last with GPU-minutes or job records, as months of `tz`
    (the pool's time zone: a record at 31 October 20:00 UTC is in November in Asia/Shanghai)."""
    first, last = run(
        con,
        "SELECT min(ts), max(ts) FROM ("  # noqa: S608 - fixed SQL
        f" SELECT first AS ts FROM ({GPU_MINUTE_SPAN}) UNION ALL SELECT last FROM ({GPU_MINUTE_SPAN})"
        " UNION ALL SELECT min(submit_time) FROM jobs UNION ALL SELECT max(coalesce(end_time, submit_time)) FROM jobs"
        ") WHERE ts IS NOT NULL",
    )[0]
    if first is None or last is None:
        return []
    out, m, end = [], Month.of(first, tz), Month.of(last, tz)
    while m <= end:
        out.append(str(m))
        m = m.next()
    return out


ALERTS = schema(
    {
        "fingerprint": pl.Utf8,
        "status": pl.Utf8,
        "month": pl.Utf8,
        "line": pl.Utf8,
        "subject": pl.Utf8,
        "severity": pl.Utf8,
        "starts_at": pl.Datetime("us"),
        "ends_at": pl.Datetime("us"),
        "summary": pl.Utf8,
        "body": pl.Utf8,
        "recorded_at": pl.Datetime("us"),
    }
)


def alerts(con: duckdb.DuckDBPyConnection, month: Month | None) -> pl.DataFrame:
    if month is None:
        return _frame(con, "SELECT * FROM alerts ORDER BY starts_at, fingerprint, status", [], ALERTS)
    return _frame(
        con, "SELECT * FROM alerts WHERE month = ? ORDER BY starts_at, fingerprint, status", [str(month)], ALERTS
    )


PLANS = schema(
    {
        "plan_id": pl.Utf8,
        "month": pl.Utf8,
        "created_at": pl.Datetime("us"),
        "status": pl.Utf8,
        "dry_run": pl.Boolean,
        "body": pl.Utf8,
    }
)


def plans(con: duckdb.DuckDBPyConnection, month: Month | None) -> pl.DataFrame:
    if month is None:
        return _frame(con, "SELECT * FROM quota_plans ORDER BY created_at", [], PLANS)
    return _frame(con, "SELECT * FROM quota_plans WHERE month = ? ORDER BY created_at", [str(month)], PLANS)


def status(con: duckdb.DuckDBPyConnection, tz: str = "UTC") -> dict[str, Any]:
    """Tables with row counts and time coverage; GPU-minute completeness per month of data (months of `tz`)."""
    info: dict[str, Any] = {}
    for table in USER_TABLES:
        entry: dict[str, Any] = {"rows": count(con, table)}
        column = _TIME_COLUMN.get(table)
        if column:
            lo, hi = run(con, f'SELECT min("{column}"), max("{column}") FROM "{table}"')[0]  # noqa: S608
            entry["min_ts"] = lo.isoformat() if lo else None
            entry["max_ts"] = hi.isoformat() if hi else None
        info[table] = entry
    months = data_months(con, tz)
    coverage = []
    for m in months:
        frame = completeness(con, Month.parse(m, tz))
        for row in frame.iter_rows(named=True):
            expected = row["expected"] or 0
            coverage.append(
                row
                | {
                    "month": m,
                    "completeness": round(row["present"] / expected, 6) if expected else None,
                }
            )
    runs = run(
        con, "SELECT count(*) FILTER (WHERE status = 'ok'), count(*) FILTER (WHERE status = 'failed') FROM import_runs"
    )[0]
    return {
        "tables": info,
        "completeness": coverage,
        "import_runs": {"ok": runs[0] if runs else 0, "failed": runs[1] if runs else 0},
    }
