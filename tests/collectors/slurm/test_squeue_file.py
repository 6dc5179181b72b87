"""Saved `squeue --json` / slurmrestd `/jobs` answers import as pending snapshots (real captured answers)."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime
from pathlib import Path

import pytest

from collectors.files import detect_kind, read_file
from gpusteward.errors import InputError

DATA = Path(__file__).resolve().parents[2] / "data"
NESTED_SQUEUE = DATA / "slurm-22.05-nested" / "squeue-pending.json"  # Slurm 22.05, no last_update
JOBS_2311 = DATA / "scheduler" / "slurm" / "23.11-v0.0.40" / "slurm-jobs.json"


def test_live_job_answers_are_told_from_sacct_json() -> None:
    assert detect_kind(NESTED_SQUEUE) == "squeue"
    assert detect_kind(JOBS_2311) == "squeue"
    assert detect_kind(DATA / "slurm-22.05-nested" / "rest-jobs-pending.json") == "squeue"
    assert detect_kind(DATA / "slurm-22.05-nested" / "sacct.json") == "sacct"
    assert detect_kind(DATA / "scheduler" / "sacct_slurm_23_11_5.json") == "sacct"


def test_a_2311_answer_is_one_snapshot_at_its_last_update() -> None:
    batch = read_file(JOBS_2311)
    pending = batch.frames["pending_jobs"]
    doc = json.loads(JOBS_2311.read_text())
    waiting = [j for j in doc["jobs"] if j["job_state"] == ["PENDING"]]
    assert pending.height == len(waiting) == 22
    assert set(pending["ts"]) == {datetime(2024, 11, 19, 14, 34, 29)}  # last_update 1732026869
    assert set(pending["cluster"]) == {"hpc"}
    assert sorted(pending["job_id"]) == sorted(j["job_id"] for j in waiting)
    assert dict(zip(pending["job_id"], pending["reason"], strict=True))[808] == "ReqNodeNotAvail"
    assert not batch.problems


def test_a_2205_answer_takes_the_time_in_its_name_and_keeps_the_quota_reasons(tmp_path: Path) -> None:
    named = tmp_path / "squeue-20260512T093000Z.json"
    shutil.copyfile(NESTED_SQUEUE, named)
    pending = read_file(named).frames["pending_jobs"]
    assert pending.select("job_id", "account", "reason", "gpus_requested").rows() == [
        (12, "vision", "AssocGrpGRES", 4),
        (13, "nlp", "AssocGrpGRES", 2),
    ]
    assert set(pending["ts"]) == {datetime(2026, 5, 12, 9, 30)}
    assert set(pending["cluster"]) == {"stewnest"}


def test_without_a_time_anywhere_the_file_time_is_used_and_said(tmp_path: Path) -> None:
    plain = tmp_path / "queue.json"
    shutil.copyfile(NESTED_SQUEUE, plain)
    os.utime(plain, (1_780_000_000, 1_780_000_000))
    batch = read_file(plain)
    assert set(batch.frames["pending_jobs"]["ts"]) == {datetime(2026, 5, 28, 20, 26, 40)}
    assert any("last_update" in p.message for p in batch.problems)


@pytest.mark.parametrize("indent", [2, None])
def test_answers_appended_one_after_another_are_one_snapshot_each(tmp_path: Path, indent: int | None) -> None:
    """`squeue --json >> file` (indented, as squeue prints) or `| jq -c .` (one per line)."""
    doc = json.loads(JOBS_2311.read_text())
    later = {**doc, "last_update": {"set": True, "infinite": False, "number": 1732027469}}
    path = tmp_path / "squeue-2024-11-19.json"
    path.write_text(json.dumps(doc, indent=indent) + "\n" + json.dumps(later, indent=indent) + "\n")
    pending = read_file(path).frames["pending_jobs"]
    assert pending.group_by("ts").len().sort("ts").rows() == [
        (datetime(2024, 11, 19, 14, 34, 29), 22),
        (datetime(2024, 11, 19, 14, 44, 29), 22),
    ]


def test_answers_with_no_pending_job_first_are_still_squeue(tmp_path: Path) -> None:
    """A quiet night: the first answers of the day hold no job; `last_backfill` still says squeue."""
    doc = json.loads(JOBS_2311.read_text())
    empty = {**doc, "jobs": []}
    path = tmp_path / "squeue-2024-11-19.json"
    path.write_text("".join(json.dumps(d, indent=2) + "\n" for d in [empty] * 400 + [doc]))
    assert detect_kind(path) == "squeue"
    assert read_file(path).frames["pending_jobs"].height == 22


def test_a_broken_answer_is_named_by_its_line(tmp_path: Path) -> None:
    path = tmp_path / "squeue-2024-11-19.json"
    good = JOBS_2311.read_text().rstrip("\n")
    path.write_text(good + '\n{"jobs": [{"job_state": ["PENDING"],\n')
    with pytest.raises(InputError, match=rf"squeue-2024-11-19\.json:{good.count(chr(10)) + 2}: not valid JSON"):
        read_file(path)
