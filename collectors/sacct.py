"""`sacct --json --duplicates` -> JOBS and JOB_EVENTS.

Reads the Slurm 22.05 shape (openapi dbv0.0.38) and, where it is easy, the 21.08 (dbv0.0.37) and
23.x (data_parser v0.0.39/v0.0.40) shapes: `state.current` as a string or a list, numbers as ints
or `{"set", "infinite", "number"}`.

Choices: times of 0 are unknown (null), and so is Slurm's reason "None"; `state.reason` is kept: in
22.05 it is the last reason the job waited (AssocGrpGRES, QOSGrpGRES, Priority, Resources...), even
after it ran. Exit codes follow sacct's ExitCode `return code:signal` (`exit_status`): the JSON's
`exit_code.return_code` and `exit_code.signal.id` (23.02 on) are stored apart, a job a signal
ended with no return code (Slurm leaves `return_code` unset for it, and `sacct -P` prints `0:9`),
so both dumps of one job store the same. Both are null when the output comes from Slurm 22.05,
whose JSON reports 0 for every job (a known bug: the database and `sacct -P` hold the real code).
GPUs are the `gres/gpu` TRES (allocated and requested); a typed entry such as `gres/gpu:h100`
gives `gpu_type`. A job that holds shards of time-sliced GPUs (`gres/shard`, no gres/gpu) counts
each shard as one GPU slot, which the node's `[[capacity.shared]]` rule divides by its replicas.
Events are rebuilt from each record: `submit`, `start` and `end` (with the final state), `preempt`
for a PREEMPTED record, and `requeue` for a record that a later record of the same job id follows
(at that record's submit time).

Arrays: each task is its own record keyed by its own job id (JobIDRaw); `array.job_id` and
`array.task_id` give the array and the task (0 / null: not an array). A record with no node and no
allocated TRES never ran, whatever its start says: Slurm 22.05 gives a job rejected at submit
("Requested node configuration is not available") state FAILED and a start equal to its submit.

A record that cannot be stored as it stands is skipped with a problem naming the record (its index
and job id) and the field: no submit time (`"time": null`, or 0, which the docs make null), a
negative GPU count, an end before the start, a time before 2000 or from 2100 on. A dump whose
`errors` list is not empty and that holds no job is refused: it is a failed query, not an empty
window.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import polars as pl

from collectors.batch import Problem
from gpusteward import capacity, tables
from gpusteward.errors import InputError

# Flag states that sacct prints instead of the base state (job_state_string), in its order.
_FLAG_STATES: tuple[str, ...] = ("COMPLETING", "CONFIGURING", "RESIZING", "REQUEUED", "REQUEUE_FED")
_FLAG_STATES += ("REQUEUE_HOLD", "SPECIAL_EXIT", "STOPPED", "REVOKED", "RESV_DEL_HOLD", "SIGNALING", "STAGE_OUT")


def read_sacct(data: Any, *, source: str) -> tuple[pl.DataFrame, pl.DataFrame, list[Problem]]:
    """(JOBS, JOB_EVENTS, problems) from parsed `sacct --json` output."""
    if not isinstance(data, Mapping) or not isinstance(data.get("jobs"), list):
        raise InputError(source, "not sacct --json output: no 'jobs' list")
    errors = _errors(data.get("errors"))
    if errors and not data["jobs"]:
        raise InputError(source, f"Slurm reported errors and no jobs: {'; '.join(errors)}"[:400])
    misreports_exit = _is_22_05(data.get("meta"))
    problems = [Problem(source, f"Slurm reported an error: {e}"[:300]) for e in errors]
    jobs: list[dict[str, Any]] = []
    for i, job in enumerate(data["jobs"]):
        try:
            jobs.append(checked(_job(job, misreports_exit)))
        except BadFieldError as exc:
            problems.append(Problem(source, f"job record {i}{_id_note(job)} skipped: {exc}"[:300]))
    frame = pl.DataFrame(jobs, schema=tables.JOBS, orient="row") if jobs else tables.empty(tables.JOBS)
    before = frame.height
    frame = frame.unique(subset=list(tables.JOBS_KEY), keep="last", maintain_order=True)
    if frame.height < before:
        problems.append(Problem(source, f"{before - frame.height} repeated job records (same job and submit time)"))
    events = _events(frame)
    return frame, events, problems


class BadFieldError(ValueError):
    """A record's field that cannot be stored: the message names the field."""

    def __init__(self, field: str, why: str) -> None:
        super().__init__(f"{field}: {why}")
        self.field = field


def _id_note(job: Any) -> str:
    job_id = job.get("job_id") if isinstance(job, Mapping) else None
    return f" (job {job_id})" if isinstance(job_id, int) and not isinstance(job_id, bool) else ""


def _errors(errors: Any) -> list[str]:
    """The messages of a dump's `errors` list (`{"error": ..., "description": ...}` objects or strings)."""
    if not isinstance(errors, list):
        return []
    out = []
    for e in errors:
        if isinstance(e, Mapping):
            parts = [str(e[k]) for k in ("description", "error") if isinstance(e.get(k), str) and e.get(k)]
            out.append(": ".join(parts) or str(dict(e))[:120])
        elif isinstance(e, str) and e:
            out.append(e)
    return out


_EARLIEST = datetime(2000, 1, 1)  # no Slurm accounting predates this: an earlier time is a corrupt 0 or less
_LATEST = datetime(2100, 1, 1)


# JOBS column -> the field of `sacct --json` it comes from, for problems that name the field.
JSON_FIELDS = {
    "submit_time": "time.submission", "eligible_time": "time.eligible", "start_time": "time.start",
    "end_time": "time.end", "gpus_requested": "tres.requested", "gpus_allocated": "tres.allocated",
}


def checked(row: dict[str, Any], fields: Mapping[str, str] = JSON_FIELDS) -> dict[str, Any]:
    """A JOBS row refused when it is not plausible: the rules both sacct readers (JSON and `-P`) share.

    `fields` names the source's field for each column, so a problem says where to look.
    """
    if row["submit_time"] is None:
        raise BadFieldError(fields["submit_time"], "missing or 0: a job record needs its submit time")
    for column in ("submit_time", "eligible_time", "start_time", "end_time"):
        moment = row[column]
        if moment is not None and not _EARLIEST <= moment < _LATEST:
            raise BadFieldError(fields[column], f"{moment:%Y-%m-%d %H:%M:%S} is outside {_EARLIEST:%Y}..{_LATEST:%Y}")
    for column in ("gpus_requested", "gpus_allocated"):
        if row[column] is not None and not 0 <= row[column] < 2**31:
            raise BadFieldError(fields[column], f"GPU count {row[column]} is out of range")
    if row["start_time"] is not None and row["end_time"] is not None and row["end_time"] < row["start_time"]:
        raise BadFieldError(fields["end_time"], f"{row['end_time']:%Y-%m-%d %H:%M:%S} is before the start")
    return row


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


def _field(name: str, read: Any, *args: Any) -> Any:
    try:
        return read(*args)
    except BadFieldError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise BadFieldError(name, str(exc)[:200]) from None


def _job(job: Any, misreports_exit: bool) -> dict[str, Any]:
    if not isinstance(job, Mapping):
        raise BadFieldError("record", f"a {type(job).__name__}, expected an object")
    time = _field("time", _table, job, "time")
    state = _field("state", _table, job, "state")
    tres = _field("tres", _table, job, "tres")
    array = _field("array", _table, job, "array")
    requested, _ = _field("tres.requested", _gpus, tres.get("requested") or [])
    allocated, gpu_type = _field("tres.allocated", _gpus, tres.get("allocated") or [])
    equivalents = _field("tres.allocated", _equivalents, tres.get("allocated") or [], allocated)
    if gpu_type is None:
        gpu_type = _field("tres.requested", _gpus, tres.get("requested") or [])[1]
    exit_code, exit_signal = None, None
    if not misreports_exit:
        exit_code, exit_signal = _field("exit_code", _json_exit, _field("exit_code", _table, job, "exit_code"))
    nodes = _field("nodes", _text, job, "nodes")
    ran = bool(nodes and nodes != "None assigned") or bool(tres.get("allocated"))
    array_job = _field("array.job_id", _number, array.get("job_id"))
    return {
        "cluster": _field("cluster", _text, job, "cluster") or _field("association", lambda: _text(
            _table(job, "association"), "cluster")),
        "job_id": _field("job_id", _job_id, job.get("job_id")),
        "submit_time": _field("time.submission", _time, time.get("submission")),
        "name": _field("name", _text, job, "name"),
        "user": _field("user", _text, job, "user"),
        "account": _field("account", _text, job, "account"),
        "partition": _field("partition", _text, job, "partition"),
        "qos": job.get("qos") if isinstance(job.get("qos"), str) else None,
        "priority": _field("priority", _number, job.get("priority")),
        "eligible_time": _field("time.eligible", _time, time.get("eligible")),
        "start_time": _field("time.start", _time, time.get("start")) if ran else None,
        "end_time": _field("time.end", _time, time.get("end")),
        "state": _state(state.get("current")),
        "reason": _reason(state.get("reason")),
        "exit_code": exit_code,
        "gpus_requested": requested,
        "gpus_allocated": allocated,
        "gpu_type": gpu_type,
        "nodes": nodes if nodes and nodes != "None assigned" else None,
        "time_limit_min": _field("time.limit", _number, time.get("limit")),
        "comment": _comment(job.get("comment")),
        "array_job_id": array_job or None,
        "array_task_id": _field("array.task_id", _number, array.get("task_id")) if array_job else None,
        "exit_signal": exit_signal,
        "gpu_equivalents": equivalents,
        "reservation": _reservation(job.get("reservation")),
        "labels": "{}",  # Slurm jobs carry no labels
    }


def _reservation(value: Any) -> str | None:
    """The reservation's name: `{"id", "name"}` (22.05 writes name 0 for none; 23.x on ""), or a plain
    string (slurmctld's job records); "" for none, None when the record has no such field."""
    if isinstance(value, Mapping):
        value = value.get("name")
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return "" if value == 0 else str(value)


_EXIT_TEXT = re.compile(r"(\d{1,3}):(\d{1,3})", re.ASCII)


def exit_status(return_code: int | None, signal: int | None) -> tuple[int | None, int | None]:
    """(return code, signal) as stored: a signal that ended the job leaves no return code (a shell
    would report 128 + signal, but Slurm records the signal itself: `0:9`, not `137:0`)."""
    if signal:
        if not 0 < signal < 128:
            raise ValueError(f"signal {signal} out of range")
        return None, signal
    if return_code is not None and not 0 <= return_code < 2**31:
        raise ValueError(f"return code {return_code} out of range")
    return return_code, None


def exit_text(text: str) -> tuple[int | None, int | None]:
    """(return code, signal) from sacct's ExitCode `code:signal` (`0:9` -> (None, 9), `1:0` -> (1, None))."""
    m = _EXIT_TEXT.fullmatch(text)
    if m is None or int(m.group(1)) > 255:
        raise ValueError(f"{text[:40]!r} is not code:signal")
    return exit_status(int(m.group(1)), int(m.group(2)))


def _json_exit(value: Mapping[str, Any]) -> tuple[int | None, int | None]:
    """The JSON's `exit_code`: {status, return_code, signal: {id, name}} (23.02 on), or {status,
    return_code} with a plain int (21.08 and 22.05: no signal)."""
    signal = value.get("signal")
    sig = _number(signal.get("id", signal.get("signal_id"))) if isinstance(signal, Mapping) else None
    return exit_status(_number(value.get("return_code")), sig)


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
        raise ValueError(f"{seconds} is out of range")
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
    """GPU count and type from a TRES list: `gres/gpu` = count, `gres/gpu:<type>` = typed counts,
    else `gres/shard` (or its typed entries) = count."""
    total: int | None = None
    typed: dict[str, int] = {}
    shards: dict[str, int] = {}
    if not isinstance(tres, Sequence) or isinstance(tres, str):
        raise TypeError(f"a TRES list is a {type(tres).__name__}")
    for item in tres:
        if not isinstance(item, Mapping) or item.get("type") != "gres":
            continue
        raw_name = item.get("name")
        name = raw_name if isinstance(raw_name, str) else ""
        count = _number(item.get("count"))
        if count is not None and count < 0:
            raise ValueError(f"{name or 'gres'} count {count} is negative")
        if name == "gpu":
            total = count
        elif name.startswith("gpu:") and count:
            typed[name[4:]] = typed.get(name[4:], 0) + count
        elif name == "shard" or (name.startswith("shard:") and count):
            shards[name] = count or 0
    if total is None and typed:
        total = sum(typed.values())
    if total is None and shards:
        # Shards of time-sliced GPUs (`--gres=shard:1`, no gres/gpu): each one slot; the node's
        # `[[capacity.shared]]` rule counts a slot 1/replicas of a GPU. gres/shard counts typed ones too.
        total = shards["shard"] if "shard" in shards else sum(shards.values())
    return total, ",".join(sorted(typed)) or None


def _equivalents(tres: Sequence[Any], total: int | None) -> float | None:
    """Whole-GPU equivalents of typed MIG gres in a TRES list (`gres/gpu:1g.10gb`); None if none."""
    typed = [
        (str(item["name"])[4:], n)
        for item in tres
        if isinstance(item, Mapping) and item.get("type") == "gres" and str(item.get("name", "")).startswith("gpu:")
        and (n := _number(item.get("count")))
    ]
    return capacity.typed_gpu_equivalents(typed, total)


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
    except RecursionError:  # Python's parser recurses per level: a hostile file nests 10,000 deep
        raise InputError(source, "JSON nested too deep to be Slurm output") from None
