"""`sacct -P` dumps (issue 19 item 4): read like the JSON, merged with a JSON dump of the same jobs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import polars as pl
import pytest

from collectors.files import detect_kind, read_file
from collectors.slurm.sacct_text import read_sacct_text
from gpusteward.errors import InputError
from warehouse import open_warehouse

DATA = Path(__file__).parents[2] / "data" / "slurm-22.05-nested"
IDS: dict[str, int] = json.loads((DATA / "scenario.json").read_text())["ids"]
HEADER = (DATA / "sacct-P.txt").read_text().splitlines()[0]


def test_dump_reads_like_the_json_with_real_exit_codes() -> None:
    text, _, problems = read_sacct_text((DATA / "sacct-P.txt").read_text().splitlines(), source="p")
    assert problems == []
    json_jobs = read_file(DATA / "sacct.json").frames["jobs"]
    key = ["cluster", "job_id", "submit_time", "start_time", "end_time", "state", "gpus_allocated", "nodes",
           "array_job_id", "array_task_id", "account", "partition", "qos"]
    assert text.select(key).sort("job_id").rows() == json_jobs.select(key).sort("job_id").rows()
    codes = dict(text.select("job_id", "exit_code").rows())
    assert codes[IDS["fail"]] == 3  # the JSON of 22.05 says 0 (stored as unknown)
    assert json_jobs.filter(pl.col("job_id") == IDS["fail"])["exit_code"].to_list() == [None]


@pytest.mark.parametrize("order", [("sacct.json", "sacct-P.txt"), ("sacct-P.txt", "sacct.json")])
def test_json_and_text_dumps_of_the_same_jobs_merge(tmp_path: Path, order: tuple[str, str]) -> None:
    assert detect_kind(DATA / "sacct-P.txt") == "sacct_text"
    events = read_file(DATA / "sacct.json").frames["job_events"].height
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        for name in order:
            batch = read_file(DATA / name)
            wh.ingest(name, batch.frames)
        assert (wh.count("jobs"), wh.count("job_events")) == (15, events)  # nothing doubled
        stored = wh.query("SELECT job_id, exit_code, priority, array_task_id FROM jobs ORDER BY job_id")
    row = {r["job_id"]: r for r in stored.rows(named=True)}
    assert row[IDS["fail"]]["exit_code"] == 3  # from the -P dump, whichever came first
    assert row[IDS["fail"]]["priority"] is not None  # from the JSON, whichever came first
    assert row[1]["array_task_id"] == 6


def test_bad_lines_name_the_job_and_field() -> None:
    good = (DATA / "sacct-P.txt").read_text().splitlines()[1]
    cols = HEADER.split("|")
    bad = good.split("|")
    bad[cols.index("End")] = "1999-01-01T00:00:00"
    jobs, _, problems = read_sacct_text([HEADER, good, "|".join(bad)], source="p")
    assert jobs.height == 1
    assert problems[0].line == 3
    assert "skipped: End: " in problems[0].message
    with pytest.raises(InputError, match=r"^p:1: header lacks Cluster, Account, .*ExitCode.*: not sacct -P output"):
        read_sacct_text(["JobID|JobIDRaw|State"], source="p")


def test_signal_and_array_forms(tmp_path: Path) -> None:
    cols = HEADER.split("|")
    row = (DATA / "sacct-P.txt").read_text().splitlines()[1].split("|")
    row[cols.index("ExitCode")] = "0:15"
    row[cols.index("JobID")] = "77_[3-9%2]"
    row[cols.index("State")] = "CANCELLED by 1000"
    jobs, _, _ = read_sacct_text([HEADER, "|".join(row)], source="p")
    got = jobs.select("exit_code", "exit_signal", "array_job_id", "array_task_id", "state").row(0)
    assert got == (None, 15, 77, None, "CANCELLED")  # a signal leaves no return code (was 128 + 15)
    path = tmp_path / "dump.txt"
    shutil.copy(DATA / "sacct-P.txt", path)
    assert read_file(path).frames["jobs"].height == 15
