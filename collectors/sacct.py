"""`sacct --json --duplicates` -> JOBS and JOB_EVENTS.

Reads the Slurm 22.05 shape (openapi dbv0.0.38) and, where it is easy, the 21.08 (dbv0.0.37) and
23.x (data_parser v0.0.39/v0.0.40) shapes: `state.current` as a string or a list, numbers as ints
or `{"set", "infinite", "number"}`.

Choices: times of 0 are unknown (null), and so is Slurm's reason "None". `exit_code` is null when
the output comes from Slurm 22.05, whose JSON reports 0 for every job (a known bug: the database
and `sacct -P` hold the real code).
GPUs are the `gres/gpu` TRES (allocated and requested); a typed entry such as `gres/gpu:h100`
gives `gpu_type`. Events are rebuilt from each record: `submit`, `start` and `end` (with the final
state), `preempt` for a PREEMPTED record, and `requeue` for a record that a later record of the
same job id follows (at that record's submit time).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import polars as pl

from collectors.batch import Problem
from gpusteward import tables
from gpusteward.errors import InputError

# Flag states that sacct prints instead of the base state (job_state_string), in its order.
_FLAG_STATES: tuple[str, ...] = ("COMPLETING", "CONFIGURING", "RESIZING", "REQUEUED", "REQUEUE_FED")
_FLAG_STATES += ("REQUEUE_HOLD", "SPECIAL_EXIT", "STOPPED", "REVOKED", "RESV_DEL_HOLD", "SIGNALING", "STAGE_OUT")


def read_sacct(data: Any, *, source: str) -> tuple[pl.DataFrame, pl.DataFrame, list[Problem]]:
    """(JOBS, JOB_EVENTS, problems) from parsed `sacct --json` output."""
    if not isinstance(data, Mapping) or not isinstance(data.get("jobs"), list):
        raise InputError(source, "not sacct --json output: no 'jobs' list")
    misreports_exit = _is_22_05(data.get("meta"))
    problems: list[Problem] = []
    jobs: list[dict[str, Any]] = []
    for i, job in enumerate(data["jobs"]):
        try:
            jobs.append(_job(job, misreports_exit))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            problems.append(Problem(source, f"job record {i} skipped: {type(exc).__name__}: {exc}"))
    frame = pl.DataFrame(jobs, schema=tables.JOBS, orient="row") if jobs else tables.empty(tables.JOBS)
    before = frame.height
    frame = frame.unique(subset=list(tables.JOBS_KEY), keep="last", maintain_order=True)
    if frame.height < before:
        problems.append(Problem(source, f"{before - frame.height} repeated job records (same job and submit time)"))
    events = _events(frame)
    return frame, events, problems


def _is_22_05(meta: Any) -> bool:
    if not isinstance(meta, Mapping):
        return False
    slurm = meta.get("Slurm") or meta.get("slurm") or {}
    if not isinstance(slurm, Mapping):
        return False
    version = slurm.get("version") or {}
    try:
        return (int(version["major"]), int(version["minor"])) == (22, 5)
    except (KeyError, TypeError, ValueError):
        return str(slurm.get("release", "")).startswith("22.05")


def _table(job: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    value = job.get(key) or {}
    if not isinstance(value, Mapping):
        raise TypeError(f"{key!r} is a {type(value).__name__}, expected an object")
    return value


def _text(job: Mapping[str, Any], key: str) -> str | None:
    value = job.get(key)
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"{key!r} is a {type(value).__name__}, expected a string")


def _job(job: Mapping[str, Any], misreports_exit: bool) -> dict[str, Any]:
    if not isinstance(job, Mapping):
        raise TypeError(f"a job record is a {type(job).__name__}, expected an object")
    if "time" not in job:
        raise KeyError("time")
    time = _table(job, "time")
    state = _table(job, "state")
    tres = _table(job, "tres")
    requested, _ = _gpus(tres.get("requested") or [])
    allocated, gpu_type = _gpus(tres.get("allocated") or [])
    if gpu_type is None:
        gpu_type = _gpus(tres.get("requested") or [])[1]
    exit_code = None if misreports_exit else _number((job.get("exit_code") or {}).get("return_code"))
    if exit_code is not None and not -(2**31) <= exit_code < 2**31:
        raise ValueError(f"exit code {exit_code} out of range")
    nodes = _text(job, "nodes")
    return {
        "cluster": _text(job, "cluster") or _text(_table(job, "association"), "cluster"),
        "job_id": _job_id(job.get("job_id")),
        "submit_time": _time(time.get("submission")),
        "name": _text(job, "name"),
        "user": _text(job, "user"),
        "account": _text(job, "account"),
        "partition": _text(job, "partition"),
        "qos": job.get("qos") if isinstance(job.get("qos"), str) else None,
        "priority": _number(job.get("priority")),
        "eligible_time": _time(time.get("eligible")),
        "start_time": _time(time.get("start")),
        "end_time": _time(time.get("end")),
        "state": _state(state.get("current")),
        "reason": _reason(state.get("reason")),
        "exit_code": exit_code,
        "gpus_requested": requested,
        "gpus_allocated": allocated,
        "gpu_type": gpu_type,
        "nodes": nodes if nodes and nodes != "None assigned" else None,
        "time_limit_min": _number(time.get("limit")),
        "comment": _comment(job.get("comment")),
    }


def _job_id(value: Any) -> int:
    number = _number(value)
    if number is None or number <= 0:
        raise ValueError(f"job_id {value!r} is not a positive number")
    return number


def _number(value: Any) -> int | None:
    """An int, or the data_parser form {set, infinite, number}; unset and infinite are null."""
    if isinstance(value, Mapping):
        if not value.get("set", True) or value.get("infinite", False):
            return None
        value = value.get("number")
    if value is None or isinstance(value, bool):
        return None
    if not isinstance(value, int | float) or (isinstance(value, float) and not math.isfinite(value)):
        raise TypeError(f"expected a finite number, got {value!r}"[:120])
    number = int(value)
    if not -(2**63) <= number < 2**63:
        raise ValueError(f"number out of range: {number}")
    return number


_LATEST_EPOCH = 253_402_300_800  # 10000-01-01: later times are corrupt


def _time(value: Any) -> datetime | None:
    seconds = _number(value)
    if not seconds:
        return None
    if not 0 < seconds < _LATEST_EPOCH:
        raise ValueError(f"time out of range: {seconds}")
    return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)


def _state(current: Any) -> str | None:
    if isinstance(current, str):
        return current
    if isinstance(current, Sequence) and current and all(isinstance(s, str) for s in current):
        flags = [s for s in _FLAG_STATES if s in current]
        return flags[0] if flags else current[0]
    return None


def _reason(reason: Any) -> str | None:
    if not isinstance(reason, str) or reason in ("", "None"):  # Slurm prints "None" for none
        return None
    return reason


def _comment(comment: Any) -> str | None:
    if isinstance(comment, Mapping):
        comment = comment.get("job")
    return comment if isinstance(comment, str) and comment else None


def _gpus(tres: Any) -> tuple[int | None, str | None]:
    """GPU count and type from a TRES list: `gres/gpu` = count, `gres/gpu:<type>` = typed counts."""
    total: int | None = None
    typed: dict[str, int] = {}
    if not isinstance(tres, Sequence) or isinstance(tres, str):
        raise TypeError(f"a TRES list is a {type(tres).__name__}")
    for item in tres:
        if not isinstance(item, Mapping) or item.get("type") != "gres":
            continue
        raw_name = item.get("name")
        name = raw_name if isinstance(raw_name, str) else ""
        count = _number(item.get("count"))
        if name == "gpu":
            total = count
        elif name.startswith("gpu:") and count:
            typed[name[4:]] = typed.get(name[4:], 0) + count
    if total is None and typed:
        total = sum(typed.values())
    return total, ",".join(sorted(typed)) or None


def _events(jobs: pl.DataFrame) -> pl.DataFrame:
    rows: list[tuple[Any, ...]] = []
    ordered = jobs.sort("cluster", "job_id", "submit_time", nulls_last=True)
    columns = ("cluster", "job_id", "submit_time", "start_time", "end_time", "state", "reason")
    records = ordered.select(*columns, "gpus_requested", "gpus_allocated").rows()
    for i, (cluster, job_id, submit, start, end, state, reason, requested, allocated) in enumerate(records):
        gpus = allocated if allocated else requested
        if submit is not None:
            rows.append((cluster, job_id, submit, "submit", "PENDING", reason, requested))
        if start is not None:
            rows.append((cluster, job_id, start, "start", "RUNNING", None, gpus))
        if end is not None:
            rows.append((cluster, job_id, end, "end", state, reason, gpus))
            if state == "PREEMPTED":
                rows.append((cluster, job_id, end, "preempt", state, reason, gpus))
        following = records[i + 1] if i + 1 < len(records) else None
        if following is not None and following[:2] == (cluster, job_id):
            when = following[2] or end
            if when is not None:
                rows.append((cluster, job_id, when, "requeue", state, reason, gpus))
    if not rows:
        return tables.empty(tables.JOB_EVENTS)
    events = pl.DataFrame(rows, schema=tables.JOB_EVENTS, orient="row")
    return events.unique(subset=list(tables.JOB_EVENTS_KEY), keep="first", maintain_order=True)


def load_json(text: str, *, source: str) -> Any:
    """Parse JSON text, naming the line of a syntax error."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, f"not valid JSON: {exc.msg}", line=exc.lineno) from None
