"""The evaluators on real Slurm 22.05 output of the nested layout (tests/data/slurm-22.05-nested, captured
by `python -m tests.realslurm.capture_nested`): D1, D2 and D5 of issue 19."""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.sacct import read_sacct
from gpusteward.domain import Month
from sla.common import window_of
from sla.interruptions import RETRY_WITHIN, _next_start, recoveries
from sla.protection_queues import QueueWaitLine
from sla.queues import QueueEvaluator
from tests.sla.builders import config, inputs
from tests.sla.english import english

DATA = Path(__file__).parents[1] / "data" / "slurm-22.05-nested"
IDS: dict[str, int] = json.loads((DATA / "scenario.json").read_text())["ids"]
MONTH = Month(2026, 12)
END = datetime(2026, 12, 1, 14)


def _jobs() -> list[dict[str, Any]]:
    jobs, _, problems = read_sacct(json.loads((DATA / "sacct.json").read_text()), source="sacct.json")
    assert problems == []
    return jobs.rows(named=True)


def _line(max_wait: str) -> str:
    return f'[[protection.queue_wait]]\nqueue = "stewnest/*"\nmax_wait = "{max_wait}"\nresolve_after = "0s"\n'


def test_d1_a_job_cancelled_while_pending_stops_waiting_when_it_ends() -> None:
    jobs = _jobs()
    cancelled = next(j for j in jobs if j["job_id"] == IDS["nlp_b"])
    assert (cancelled["state"], cancelled["start_time"]) == ("CANCELLED", None)
    ins = inputs(jobs=jobs, month=MONTH, data_end=END)
    # every job of the run waited a few seconds: a 10 s line has nothing to say (it said 43,963 minutes)
    assert QueueWaitLine().episodes(ins, config(_line("10s"))).height == 0
    # a 2 s line: the cancelled job's breach ends when it was cancelled, not at the month's end
    out = QueueWaitLine().episodes(ins, config(_line("2s")))
    assert out.height >= 1
    assert out["end"].max() <= max(j["end_time"] for j in jobs if j["end_time"] is not None)
    assert all(w < 60 for w in out["worst_value"].to_list())  # seconds, not a month


def test_d2_a_job_preempted_with_cancel_never_recovered() -> None:
    jobs = _jobs()
    scav = next(j for j in jobs if j["job_id"] == IDS["scav"])
    assert scav["state"] == "PREEMPTED"
    assert (scav["end_time"] - scav["submit_time"]).total_seconds() <= 1  # preempted at once
    # In the run it was submitted, started and cancelled in one second; whether this capture's
    # did is chance, so the record is also read with its submit moved onto its end, as it was there.
    same_second = {**scav, "submit_time": scav["end_time"], "eligible_time": scav["end_time"],
                   "start_time": scav["end_time"]}
    for record in (scav, same_second):
        rows = [record if j["job_id"] == IDS["scav"] else j for j in jobs]
        ins = inputs(jobs=rows, month=MONTH, data_end=END)
        out = recoveries(ins.jobs, window_of(ins))
        row = out.filter(pl.col("job_id") == IDS["scav"]).row(0, named=True)
        assert (row["recovered_at"], row["recovery_s"]) == (None, None)  # it never ran again


def test_d5_a_job_rejected_at_submit_never_started_and_is_not_counted_as_started() -> None:
    jobs = _jobs()
    rejected = next(j for j in jobs if j["name"] == "too-big")
    assert (rejected["state"], rejected["start_time"], rejected["nodes"]) == ("FAILED", None, None)
    cfg = config('[[rules]]\nscenario = "training"\nmatch = { partition = "dev" }\n')
    out = QueueEvaluator().evaluate(inputs(jobs=jobs, month=MONTH, data_end=END), cfg)
    waits = out.filter((pl.col("indicator") == "queue_wait_p50") & (pl.col("subject") == "stewnest/train"))
    started_train = [j for j in jobs if j["partition"] == "train" and j["start_time"] is not None]
    assert waits["rows"].to_list() == [len(started_train)]
    assert rejected["job_id"] not in [j["job_id"] for j in started_train]


def test_array_tasks_are_named_as_sacct_prints_them() -> None:
    """D4: six rows keyed by raw job id, all named `arr`; the review now names a task `1_5`, not 9."""
    jobs = [j for j in _jobs() if j["name"] == "arr"]
    labels = {f"{j['array_job_id']}_{j['array_task_id']}" for j in jobs}
    assert len(labels) == 6
    cfg = config('[[rules]]\nscenario = "training"\nmatch = { partition = "dev" }\n' + _line("0s"))
    ins = inputs(jobs=jobs, month=MONTH, data_end=END)
    waits = QueueEvaluator().evaluate(ins, cfg).filter(pl.col("indicator") == "queue_wait_max")
    named = re.search(r"\(job (\S+),", english(waits.filter(pl.col("subject") == "stewnest/dev")["evidence"][0]))
    assert named is not None
    assert named.group(1) in labels
    episodes = QueueWaitLine().episodes(ins, cfg)
    assert set(re.findall(r"job (\S+) waited", english(episodes["evidence"][0]))) <= labels
    assert re.findall(r"job (\S+) waited", english(episodes["evidence"][0]))


def _reference_next_start(setbacks: list[dict[str, Any]], records: list[dict[str, Any]]) -> list[Any]:
    """The definition, pair by pair: the first other record of the job submitted at or after the end."""
    out = []
    for s in setbacks:
        later = [r for r in records if r["job_id"] == s["job_id"] and r["start_time"] is not None
                 and r["submit_time"] != s["submit_time"]
                 and s["end_time"] <= r["submit_time"] <= s["end_time"] + RETRY_WITHIN]
        later.sort(key=lambda r: r["submit_time"])
        out.append(later[0]["start_time"] if later else None)
    return out


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 3), st.integers(0, 20), st.integers(0, 5), st.booleans()),
                min_size=1, max_size=25))
def test_recovery_matches_its_definition(specs: list[tuple[int, int, int, bool]]) -> None:
    """Sorted joins give what the pairwise definition gives, self-matches excluded (D2)."""
    base = datetime(2026, 12, 1)
    records: dict[tuple[int, datetime], dict[str, Any]] = {}
    for job, submit, run, preempted in specs:
        t = base + timedelta(hours=submit)
        records[(job, t)] = {"cluster": "c", "job_id": job, "submit_time": t, "start_time": t,
                             "end_time": t + timedelta(hours=run), "state": "PREEMPTED" if preempted else "COMPLETED",
                             "user": "u", "name": f"n{job}"}
    rows = list(records.values())
    frame = pl.DataFrame(rows)
    setbacks = frame.filter(pl.col("state") == "PREEMPTED").sort("end_time")
    got = _next_start(setbacks, frame, ["cluster", "job_id"]).to_list()
    assert got == _reference_next_start(setbacks.rows(named=True), rows)
