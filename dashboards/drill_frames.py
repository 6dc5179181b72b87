"""What the drill-down pages show: the month's jobs in the view's scope, and their display frames with
translated headers (pure builders; dashboards/drill_pages.py draws them)."""

from __future__ import annotations

import polars as pl

from dashboards import jobs as job_frames
from dashboards.texts import Texts
from dashboards.view import View
from gpusteward.domain import Month
from reports.model import Quantity

ROWS_SHOWN = 500


def zoned_month(view: View) -> Month:
    """The view's month in the pool's time zone, as the evaluation counted it."""
    return view.month.in_zone(view.config.timezone)


def all_month_jobs(view: View) -> pl.DataFrame:
    """JOB_ROWS of the view's month, every team's (a month of 1,000 GPUs: 135,000 records, about a second)."""
    return job_frames.job_rows(
        view.model.job_records(view.month), view.model.month_outputs(view.month).idle,
        view.model.month_outputs(view.month).ledger, view.config,
        job_frames.window(zoned_month(view), view.model.status()),
    )


def month_jobs(view: View, rows: pl.DataFrame | None = None) -> pl.DataFrame:
    """JOB_ROWS of the view's month within its filters (a team-scoped viewer sees only the team's jobs);
    `rows`: the month's jobs when the caller holds them already."""
    rows = all_month_jobs(view) if rows is None else rows
    f = view.filters
    for column, values in (("cluster", f.clusters), ("team", f.teams), ("scenario", f.scenarios)):
        if values:
            rows = rows.filter(pl.col(column).is_in(list(values)))
    return rows


def _hours(tx: Texts, value: object) -> str:
    return tx.fmt.quantity(Quantity(value if isinstance(value, int | float) else None, "gpu_hours"))


def _duration(tx: Texts, value: object) -> str:
    return tx.fmt.quantity(Quantity(value if isinstance(value, int | float) else None, "duration"))


def _percent(tx: Texts, value: object) -> str:
    return tx.fmt.quantity(Quantity(value if isinstance(value, int | float) else None, "percent"))


def state_text(tx: Texts, state: object) -> str:
    """A Slurm state in the page's language, the state's own name kept beside it."""
    name = str(state or "")
    key = f"job.state.{name}"
    return tx(key) if key in tx.messages else name or "—"


def wait_text(tx: Texts, wait_s: object, first_start: object) -> str:
    """A job's queue wait in the month: its runs started in the month count, as in the jobs table; a job
    whose runs all started before the month waited then, which is said instead of "no data"."""
    if wait_s is None and first_start is not None:
        return tx("job.wait_before_month")
    return tx.fmt.quantity(Quantity(wait_s if isinstance(wait_s, int | float) else None, "duration"))


def exit_text(tx: Texts, code: object, signal: object) -> str:
    """sacct's `code:signal` as words: the return code, or the signal that ended the job."""
    if isinstance(signal, int) and signal:
        return tx("job.exit_signal", signal=signal)
    return str(code) if isinstance(code, int) else "—"


def team_table(rows: pl.DataFrame, view: View) -> pl.DataFrame | None:
    if rows.is_empty():
        return None
    tx = view.tx
    g = job_frames.team_rows(rows)
    return pl.DataFrame({
        tx("col.team"): [view.team_name(t) for t in g["team"].to_list()],
        tx("jobs.col.jobs"): g["jobs"],
        tx("jobs.col.gpu_hours"): g["gpu_hours"].round(1),
        tx("col.idle"): g["idle_hours"].round(1),
        tx("jobs.col.idle_share"): [_percent(tx, v) for v in g["idle_share"].to_list()],
        tx("jobs.col.longest_wait"): [_duration(tx, v) for v in g["wait_max_s"].to_list()],
        tx("col.failed"): g["failed"],
        tx("jobs.col.preemptions"): g["preemptions"],
    })


def job_table(rows: pl.DataFrame, view: View) -> pl.DataFrame | None:
    """One row per job, in the order given; numbers kept numeric where a grid sorts them."""
    if rows.is_empty():
        return None
    tx = view.tx
    top = rows.head(ROWS_SHOWN)
    return pl.DataFrame({
        tx("col.cluster"): top["cluster"],
        tx("col.job"): top["job"],
        tx("col.job_name"): top["name"].fill_null("—"),
        tx("jobs.col.user"): top["user"].fill_null("—"),
        tx("col.team"): [view.team_name(t) for t in top["team"].to_list()],
        tx("col.scenario"): [tx.fmt.term("scenario", s) for s in top["scenario"].to_list()],
        tx("jobs.col.gpu_equivalents"): top["gpus"].round(2),
        tx("jobs.col.gpu_hours"): top["gpu_hours"].round(2),
        tx("col.idle"): top["idle_hours"].round(2),
        tx("jobs.col.idle_share"): [_percent(tx, v) for v in top["idle_share"].to_list()],
        tx("jobs.col.wait"): [_duration(tx, v) for v in top["wait_s"].to_list()],
        tx("jobs.col.outcome"): [state_text(tx, s) for s in top["state"].to_list()],
        tx("jobs.col.exit"): [exit_text(tx, c, s) for c, s in zip(top["exit_code"].to_list(),
                                                                     top["exit_signal"].to_list(), strict=True)],
        tx("jobs.col.preemptions"): top["preemptions"],
    })


def records_table(records: pl.DataFrame, view: View) -> pl.DataFrame:
    """A job's records (a requeued job has several), oldest first, times in the pool's zone; each with its
    own wait, also when it started before the month."""
    tx = view.tx
    rows = job_frames.record_rows(records).sort("submit_time").to_dicts()
    moment = tx.fmt.moment
    return pl.DataFrame({
        tx("job.col.submitted", zone=tx.zone): [moment(r["submit_time"]) for r in rows],
        tx("job.col.started", zone=tx.zone): [moment(r["start_time"]) if r["start_time"] else "—" for r in rows],
        tx("job.col.ended", zone=tx.zone): [moment(r["end_time"]) if r["end_time"] else "—" for r in rows],
        tx("jobs.col.wait"): [_duration(tx, r["wait_s"]) for r in rows],
        tx("jobs.col.outcome"): [state_text(tx, r["state"]) for r in rows],
        tx("jobs.col.exit"): [exit_text(tx, r["exit_code"], r["exit_signal"]) for r in rows],
        tx("jobs.col.gpus"): [str(r["gpus_allocated"]) if r["gpus_allocated"] is not None else "—" for r in rows],
        tx("job.col.nodes"): [str(r["nodes"] or "—") for r in rows],
        tx("col.queue"): [f"{r['cluster']}/{r['partition'] or '?'}" for r in rows],
    })


def ledger_table(lines: pl.DataFrame, view: View, job_id: int) -> pl.DataFrame | None:
    if lines.is_empty():
        return None
    tx = view.tx
    rows = lines.to_dicts()
    return pl.DataFrame({
        tx("col.since", zone=tx.zone): [tx.fmt.moment(r["ts"]) for r in rows],
        tx("job.col.action"): [tx(f"job.action.{r['action']}") if f"job.action.{r['action']}" in tx.messages
                               else str(r["action"]) for r in rows],
        tx("job.col.role"): [tx("job.role.gained" if r["gained_job_id"] == job_id and r["job_id"] != job_id
                                else "job.role.lost") for r in rows],
        tx("jobs.col.gpus"): [str(r["gpus"]) if r["gpus"] is not None else "—" for r in rows],
        tx("job.col.held"): [_hours(tx, r["gpu_hours_held"]) for r in rows],
        tx("job.col.lost"): [_hours(tx, r["gpu_hours_lost"]) for r in rows],
        tx("job.col.other"): [str(r["gained_job_id"] if r["job_id"] == job_id else r["job_id"]) if (
            r["gained_job_id"] is not None) else "—" for r in rows],
        tx("col.reason"): [str(r["reason"] or "—") for r in rows],
    })
