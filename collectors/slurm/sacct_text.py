"""`sacct -P` dumps -> JOBS and JOB_EVENTS, the same records `sacct --json` gives, with real exit codes.

Slurm 22.05's JSON reports exit code 0 for every job; `sacct -P` prints the database's. A dump made with

    TZ=UTC sacct -a -D -X -P -o JobID,JobIDRaw,Cluster,Account,Partition,QOS,State,ExitCode,\\
        DerivedExitCode,Reason,Submit,Eligible,Start,End,AllocTRES,NodeList [,User,JobName,ReqTRES,Timelimit]

is read into the same rows, keyed by (Cluster, JobIDRaw, Submit), so a JSON dump of the same jobs
imported before or after merges with it: each record is stored once, the exit code from this dump,
the priority from the JSON. Times are read as UTC (sacct prints local time without an offset: dump
with TZ=UTC). Columns are found by the header, in any order; steps (`12.batch`) are skipped.

`JobID` `123_4` is task 4 of array 123 (JobIDRaw is the task's own job id); `123_[5-9]` is a
pending array's tasks not yet split off, read as one record of the array. `State` `CANCELLED by 0`
is CANCELLED. ExitCode `code:signal` becomes `exit_code` and `exit_signal` as the JSON reader stores
them (`collectors.sacct.exit_status`: `0:9` is signal 9 with no return code, `1:0` return code 1).
The same checks as the JSON reader apply (`collectors.sacct.checked`): a record that fails one is
skipped with a problem naming its line, job and field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime
from typing import Any

import polars as pl

from collectors.batch import Problem
from collectors.sacct import BadFieldError, _events, checked, exit_text
from collectors.sacctmgr import pipe_records
from collectors.slurm.gpu_request import gpu_in_tres
from collectors.slurm.shapes import gpu_or_shard_in_tres
from gpusteward import capacity, tables

REQUIRED = ("JobID", "JobIDRaw", "Cluster", "Account", "Partition", "QOS", "State", "ExitCode", "DerivedExitCode",
            "Reason", "Submit", "Eligible", "Start", "End", "AllocTRES", "NodeList")
_FIELDS = {
    "submit_time": "Submit", "eligible_time": "Eligible", "start_time": "Start", "end_time": "End",
    "gpus_requested": "ReqTRES", "gpus_allocated": "AllocTRES",
}
_ARRAY = re.compile(r"(\d+)_(\d+|\[[^\]]*\])", re.ASCII)
_LIMIT = re.compile(r"(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)", re.ASCII)
_GPU_TYPE = re.compile(r"(?:^|,)gres/gpu:([^=,]+)=\d+", re.ASCII)
_GPU_TYPED = re.compile(r"(?:^|,)gres/gpu:([^=,]+)=(\d{1,10})", re.ASCII)
_UNKNOWN = ("", "Unknown", "None")


def is_sacct_text(first_line: str) -> bool:
    """Whether a header line is `sacct -P`'s (JobID and JobIDRaw first among its columns)."""
    names = first_line.rstrip("\r\n").rstrip("|").split("|")
    return "JobID" in names and "JobIDRaw" in names and "State" in names


def read_sacct_text(lines: Iterable[str], *, source: str) -> tuple[pl.DataFrame, pl.DataFrame, list[Problem]]:
    """(JOBS, JOB_EVENTS, problems) from a `sacct -P` dump with the columns in REQUIRED."""
    rows: list[dict[str, Any]] = []
    problems: list[Problem] = []

    for lineno, record in pipe_records(lines, source=source, required=REQUIRED, what="sacct -P"):
        if "." in record["JobID"]:
            continue  # a step (12.batch, 12.0): jobs only
        try:
            rows.append(checked(_row(record), _FIELDS))
        except BadFieldError as exc:
            problems.append(Problem(source, f"job {record['JobID'][:40]!r} skipped: {exc}"[:300], line=lineno))
    frame = pl.DataFrame(rows, schema=tables.JOBS, orient="row") if rows else tables.empty(tables.JOBS)
    frame = frame.unique(subset=list(tables.JOBS_KEY), keep="last", maintain_order=True)
    return frame, _events(frame), problems


def _field(name: str, read: Any, text: str) -> Any:
    try:
        return read(text)
    except ValueError as exc:
        raise BadFieldError(name, str(exc)[:200]) from None


def _row(r: dict[str, str]) -> dict[str, Any]:
    nodes = r["NodeList"] if r["NodeList"] not in ("", "None assigned") else None
    alloc = r["AllocTRES"]
    allocated = _field("AllocTRES", _gpus, alloc)
    array = _ARRAY.fullmatch(r["JobID"])
    task = array.group(2) if array else None
    exit_status = _field("ExitCode", _exit, r["ExitCode"])
    return {
        "cluster": r["Cluster"] or None,
        "job_id": _field("JobIDRaw", _count, r["JobIDRaw"]),
        "submit_time": _field("Submit", _time, r["Submit"]),
        "name": r.get("JobName") or None,
        "user": r.get("User") or None,
        "account": r["Account"] or None,
        "partition": r["Partition"] or None,
        "qos": r["QOS"] or None,
        "priority": None,
        "eligible_time": _field("Eligible", _time, r["Eligible"]),
        # a record with no node and no allocation never ran (Slurm gives a job rejected at submit a start)
        "start_time": _field("Start", _time, r["Start"]) if nodes or alloc else None,
        "end_time": _field("End", _time, r["End"]),
        "state": r["State"].split(" ", 1)[0] or None,  # "CANCELLED by 0"
        "reason": None if r["Reason"] in _UNKNOWN else r["Reason"],
        "exit_code": exit_status[0],
        "gpus_requested": _field("ReqTRES", _gpus, r.get("ReqTRES", "")),
        "gpus_allocated": allocated,
        "gpu_type": ",".join(sorted(set(_GPU_TYPE.findall(alloc or r.get("ReqTRES", ""))))) or None,
        "nodes": nodes,
        "time_limit_min": _field("Timelimit", _minutes, r.get("Timelimit", "")),
        "comment": None,
        "array_job_id": int(array.group(1)) if array else None,
        "array_task_id": int(task) if task is not None and task.isdigit() else None,
        "exit_signal": exit_status[1],
        "gpu_equivalents": capacity.typed_gpu_equivalents(
            [(t, int(n)) for t, n in _GPU_TYPED.findall(alloc or "")], allocated
        ),
        "reservation": r.get("Reservation"),  # "" for none; None when the dump lacks the column
        "labels": "{}",  # Slurm jobs carry no labels
    }


def _count(text: str) -> int:
    if not re.fullmatch(r"\d{1,18}", text, re.ASCII) or int(text) == 0:
        raise ValueError(f"{text[:40]!r} is not a job id")
    return int(text)


def _time(text: str) -> datetime | None:
    if text in _UNKNOWN:
        return None
    try:
        return datetime.fromisoformat(text).replace(tzinfo=None)
    except ValueError:
        raise ValueError(f"{text[:40]!r} is not a time") from None


def _exit(text: str) -> tuple[int | None, int | None]:
    return (None, None) if text in _UNKNOWN else exit_text(text)


def _gpus(text: str) -> int | None:
    if not text:
        return None
    if re.search(r"(?:^|,)gres/gpu=-", text):
        raise ValueError("GPU count is negative")
    if re.search(r"(?:^|,)gres/shard=-", text):
        raise ValueError("shard count is negative")
    count = gpu_in_tres(text)
    if count is None and "gres/gpu:" in text:  # only typed entries: their sum
        count = sum(int(n) for n in re.findall(r"(?:^|,)gres/gpu:[^=,]+=(\d{1,10})", text, re.ASCII))
    if count is None:  # shards of time-sliced GPUs (`--gres=shard:1`): each one slot
        count = gpu_or_shard_in_tres(text)
    return count


def _minutes(text: str) -> int | None:
    m = _LIMIT.fullmatch(text)
    if m is None:
        return None  # UNLIMITED, Partition_Limit, empty
    days, hours, minutes, _seconds = (int(g) if g else 0 for g in m.groups())
    if m.group(2) is None:  # MM:SS
        hours, minutes = 0, int(m.group(3))
    return (days * 24 + hours) * 60 + minutes
