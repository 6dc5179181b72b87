"""sacct --json (21.08, 22.05, 23.x shapes) -> JOBS and JOB_EVENTS."""

from __future__ import annotations

import copy
import json
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from collectors.sacct import load_json, read_sacct
from gpusteward import tables
from gpusteward.errors import InputError

DATA = Path(__file__).parents[1] / "data" / "scheduler"
FILES = sorted(p.name for p in DATA.glob("*.json"))


def _read(name: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    jobs, events, problems = read_sacct(json.loads((DATA / name).read_text()), source=name)
    assert problems == []
    return jobs, events


@pytest.mark.parametrize("name", FILES)
def test_every_fixture_parses(name: str) -> None:
    jobs, events = _read(name)
    assert jobs.schema == tables.JOBS
    assert events.schema == tables.JOB_EVENTS
    assert jobs.height >= 1
    assert jobs["gpus_allocated"].null_count() == 0
    assert jobs.select(tables.JOBS_KEY).is_unique().all()
    assert events.select(tables.JOB_EVENTS_KEY).is_unique().all()


def test_local_22_05_recording() -> None:
    jobs, events = _read("sacct-22.05.8-local.json")
    assert jobs.height == 9
    assert jobs["exit_code"].null_count() == 9  # 22.05 reports 0 for every job; job 2 exited with 3:
    assert "2|bob|inference|infer|normal|FAILED|3:0|" in (DATA / "sacct-22.05.8-local.txt").read_text()
    assert set(jobs["gpu_type"]) == {"h100"}
    assert set(jobs["cluster"]) == {"gpuobs"}
    job = {r["job_id"]: r for r in jobs.rows(named=True)}
    assert (job[1]["state"], job[1]["gpus_requested"], job[1]["gpus_allocated"]) == ("COMPLETED", 2, 2)
    assert (job[2]["state"], job[3]["state"], job[4]["state"]) == ("FAILED", "CANCELLED", "TIMEOUT")
    assert (job[5]["state"], job[5]["qos"], job[5]["gpus_allocated"]) == ("PREEMPTED", "low", 8)
    assert job[8]["reason"] == "QOSGrpGRES"
    assert job[1]["reason"] is None
    assert job[1]["submit_time"] == datetime(2026, 11, 29, 15, 3, 30)
    assert job[1]["start_time"] == datetime(2026, 11, 29, 15, 3, 31)
    assert job[1]["end_time"] == datetime(2026, 11, 29, 15, 3, 36)
    assert (job[4]["time_limit_min"], job[1]["nodes"], job[1]["priority"]) == (1, "gpu-01", 1000)
    counts = events.group_by("event").len().sort("event").rows()
    assert counts == [("end", 9), ("preempt", 1), ("start", 9), ("submit", 9)]
    preempt = events.filter(pl.col("event") == "preempt").row(0, named=True)
    assert (preempt["job_id"], preempt["state"], preempt["gpus"]) == (5, "PREEMPTED", 8)


def test_other_versions() -> None:
    j21, _ = _read("sacct_slurm_21_8_8.json")
    assert j21.select("state", "exit_code", "gpus_allocated", "cluster").row(0) == ("REQUEUED", 0, 1, "cedar")
    j22, _ = _read("sacct_slurm_22_5_9.json")
    assert j22.select("state", "exit_code", "gpus_allocated").row(0) == ("FAILED", None, 16)
    assert j22["nodes"].to_list() == ["ng[30103,30203,30706-30707]"]
    j23, e23 = _read("sacct_slurm_23_11_5.json")
    row = j23.row(0, named=True)
    assert (row["state"], row["priority"], row["time_limit_min"], row["exit_code"], row["end_time"]) == (
        "RUNNING",
        499522,
        7200,
        0,
        None,
    )
    assert e23["event"].to_list() == ["submit", "start"]  # still running: no end


EPOCH = 1_790_000_000  # 2026-09-21: small times below are seconds after it (0 stays 0, Slurm's "unset")


def _job(job_id: int, submit: int, start: int, end: int, state: str) -> dict[str, Any]:
    base = json.loads((DATA / "sacct-22.05.8-local.json").read_text())["jobs"][0]
    job: dict[str, Any] = copy.deepcopy(base)
    job["job_id"] = job_id

    def at(t: int) -> int:
        return t and EPOCH + t

    job["time"].update(submission=at(submit), eligible=at(submit), start=at(start), end=at(end))
    job["state"]["current"] = state
    return job


def test_preempted_then_requeued_records() -> None:
    data = {
        "meta": {"Slurm": {"version": {"major": 23, "minor": 2, "micro": 1}}},
        "jobs": [
            _job(7, 1000, 1010, 1100, "PREEMPTED"),
            _job(7, 1220, 1300, 1400, "COMPLETED"),
            _job(8, 1000, 0, 1005, "CANCELLED"),
            _job(9, 1000, 0, 0, "PENDING"),
        ],
    }
    jobs, events, problems = read_sacct(data, source="s")
    assert problems == []
    assert jobs.height == 4
    assert jobs["exit_code"].to_list() == [0, 0, 0, 0]  # not 22.05: the JSON's exit code is used
    seen = [(r[1], int(r[2].timestamp()) % 10000, r[3], r[4]) for r in events.sort("job_id", "ts", "event").rows()]
    assert seen == [
        (7, 1000, "submit", "PENDING"),
        (7, 1010, "start", "RUNNING"),
        (7, 1100, "end", "PREEMPTED"),
        (7, 1100, "preempt", "PREEMPTED"),
        (7, 1220, "requeue", "PREEMPTED"),
        (7, 1220, "submit", "PENDING"),
        (7, 1300, "start", "RUNNING"),
        (7, 1400, "end", "COMPLETED"),
        (8, 1000, "submit", "PENDING"),
        (8, 1005, "end", "CANCELLED"),
        (9, 1000, "submit", "PENDING"),
    ]
    assert jobs.filter(pl.col("job_id") == 8)["start_time"].to_list() == [None]


def test_bad_records_are_problems_and_bad_files_errors() -> None:
    data = {"jobs": [{"job_id": 1}, _job(2, 1000, 1001, 1002, "COMPLETED")]}
    jobs, _, problems = read_sacct(data, source="s")
    assert jobs["job_id"].to_list() == [2]
    assert problems[0].message.startswith("job record 0 (job 1) skipped: time.submission: missing")
    with pytest.raises(InputError, match="no 'jobs' list"):
        read_sacct({"meta": {}}, source="s")
    with pytest.raises(InputError, match=r"^s:3: not valid JSON"):
        load_json('{\n"jobs": [\n,]}', source="s")


def test_duplicate_records_keep_the_last() -> None:
    data = {"jobs": [_job(3, 1000, 1001, 0, "RUNNING"), _job(3, 1000, 1001, 1500, "COMPLETED")]}
    jobs, _, problems = read_sacct(data, source="s")
    assert jobs["state"].to_list() == ["COMPLETED"]
    assert "repeated job records" in problems[0].message


def test_the_reservation_is_read_and_slurm_records_carry_no_labels() -> None:
    """Reclaim exemptions by reservation need it: 22.05 writes `{"id": 0, "name": 0}` for none, later versions
    `""`; a job in one names it. Slurm has no labels: its records say so (`{}`), unlike unknown (null)."""
    data = json.loads((DATA / "sacct-22.05.8-local.json").read_text())
    data["jobs"][1]["reservation"] = {"id": 3, "name": "maint-gpu"}
    data["jobs"][2]["reservation"] = {"id": 0, "name": ""}
    del data["jobs"][3]["reservation"]
    jobs, _, problems = read_sacct(data, source="resv")
    assert problems == []
    assert jobs.select("job_id", "reservation").sort("job_id").rows()[:5] == [
        (1, ""), (2, "maint-gpu"), (3, ""), (4, None), (5, "")]
    assert set(jobs["labels"]) == {"{}"}


def test_sacct_text_reads_the_reservation_column_when_the_dump_has_it() -> None:
    from collectors.slurm.sacct_text import read_sacct_text

    head = ("JobID|JobIDRaw|Cluster|Account|Partition|QOS|State|ExitCode|DerivedExitCode|Reason|Submit|Eligible|"
            "Start|End|AllocTRES|NodeList")
    row = "7|7|east|nlp|train|normal|RUNNING|0:0|0:0|None|2026-10-01T00:00:00|2026-10-01T00:00:00|" \
          "2026-10-01T00:01:00|Unknown|gres/gpu=1|gpu-01"
    without, _, _ = read_sacct_text([head, row], source="p")
    with_column, _, _ = read_sacct_text([head + "|Reservation", row + "|maint-gpu"], source="p")
    assert (without["reservation"].item(), with_column["reservation"].item()) == (None, "maint-gpu")
