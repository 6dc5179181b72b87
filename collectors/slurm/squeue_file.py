"""Saved `squeue --json` (or slurmrestd `GET /slurm/vX/jobs`) answers -> PENDING_JOBS, as the live snapshot stores them.

A site without a live connection can keep the queue's history with a cron job such as

    squeue --json -t PENDING >> squeue-$(date -u +%F).json

and import the files: the answers one after the other as squeue prints them (indented over many
lines), or one per line (`| jq -c .`). Each answer is one snapshot. Its time is the answer's `last_update` (23.02 and
later); 22.05's answers have none, so the time in the file name (`...20261101T120000Z...`) is
used, else the file's modification time, with a problem saying so. Its cluster is the answer's
`meta.slurm.cluster`, else the jobs' own `cluster`, else the import's default. Running jobs in an
answer are ignored: only the waiting jobs and their reasons are stored (`shapes.pending_jobs`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

import polars as pl

from collectors.batch import Problem
from collectors.slurm.shapes import _epoch, pending_rows
from gpusteward import tables
from gpusteward.errors import InputError

_LIVE_JOB = re.compile(r'"(?:job_state|last_backfill)"\s*:')


def is_live_jobs(head: str) -> bool:
    """Whether JSON text is slurmctld's view of jobs (squeue, slurmrestd `/jobs`), not sacct's.

    slurmctld's job records carry `job_state` (slurmdbd's, sacct's, a `state` object instead), and
    its answers from 23.02 on a top-level `last_backfill`, which an answer with no job still has."""
    return _LIVE_JOB.search(head) is not None


def read_squeue(
    lines: Iterable[str], *, source: str, default_cluster: str, fallback_ts: datetime
) -> tuple[pl.DataFrame, list[Problem]]:
    """(PENDING_JOBS, problems) of every answer in the file; `fallback_ts`: the time of an answer without one."""
    docs = _documents("\n".join(lines), source)
    problems: list[Problem] = []
    rows: list[tuple[Any, ...]] = []  # one frame for the file: a day holds hundreds of answers, most of them empty
    for n, doc in docs:
        where = source if n is None else f"{source}:{n}"
        if not isinstance(doc, Mapping) or not isinstance(doc.get("jobs"), list):
            raise InputError(where, "not a squeue --json answer (no `jobs` list)")
        ts = _answer_time(doc, where)
        if ts is None:
            ts = fallback_ts
            if not problems:
                problems.append(Problem(source, "no last_update in the answer (Slurm 22.05); used the file's time"))
        rows += pending_rows(doc, cluster=_cluster(doc, default_cluster), ts=ts, source=where)
    if not rows:
        return tables.empty(tables.PENDING_JOBS), problems
    return pl.DataFrame(rows, schema=tables.PENDING_JOBS, orient="row"), problems


def _documents(text: str, source: str) -> list[tuple[int | None, Any]]:
    """(first line, answer) of each answer in the text, one after the other; the line is None when
    the text is a single answer."""
    decoder = json.JSONDecoder()
    docs: list[tuple[int | None, Any]] = []
    at = _skip_space(text, 0)
    line, counted = 1, 0  # the line of `at`, counted up to `counted`: a day's file holds hundreds of answers
    while at < len(text):
        line += text.count("\n", counted, at)
        counted = at
        try:
            doc, at = decoder.raw_decode(text, at)
        except json.JSONDecodeError as exc:
            raise InputError(source, f"not valid JSON: {exc.msg}", line=exc.lineno) from None
        except RecursionError:  # Python's parser recurses per level: a hostile file nests 10,000 deep
            raise InputError(source, "JSON nested too deep to be Slurm output", line=line) from None
        docs.append((line, doc))
        at = _skip_space(text, at)
    if not docs:
        raise InputError(source, "no squeue --json answer in the file")
    return [(None, docs[0][1])] if len(docs) == 1 else docs


def _skip_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _answer_time(doc: Mapping[str, Any], where: str) -> datetime | None:
    try:
        return _epoch(doc.get("last_update"), "last_update")
    except (TypeError, ValueError) as exc:
        raise InputError(where, str(exc)) from None


def _cluster(doc: Mapping[str, Any], default: str) -> str:
    meta = doc.get("meta")
    slurm = meta.get("slurm") if isinstance(meta, Mapping) else None
    name = slurm.get("cluster") if isinstance(slurm, Mapping) else None
    if isinstance(name, str) and name:
        return name
    for job in doc.get("jobs") or []:
        if isinstance(job, Mapping) and isinstance(job.get("cluster"), str) and job["cluster"]:
            return str(job["cluster"])
    return default
