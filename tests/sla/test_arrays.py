"""Job arrays grouped per array (sla/arrays.py) on real Slurm 22.05 output of the nested layout
(tests/data/slurm-22.05-nested: array `arr`, tasks 1_1 .. 1_6, raw ids 5-9 and 1), and stored and read
back by the warehouse like the other month outputs."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta
from pathlib import Path

import polars as pl
from polars.testing import assert_frame_equal

from sla.arrays import array_summary
from sla.month import evaluate_month
from tests.sla.builders import config, inputs
from tests.sla.test_slurm_nested import END, MONTH, _jobs
from warehouse import open_warehouse


def test_the_captured_array_is_one_row_of_six_tasks() -> None:
    jobs = _jobs()
    out = array_summary(inputs(jobs=jobs, month=MONTH, data_end=END), config(""))
    assert out.height == 1
    row = out.row(0, named=True)
    tasks = [j for j in jobs if j["array_job_id"] is not None]
    assert (row["cluster"], row["array_job_id"], row["name"], row["queue"]) == ("stewnest", 1, "arr", "stewnest/dev")
    assert (row["tasks"], row["records"], row["started"], row["completed"]) == (6, 6, 6, 6)
    assert (row["failed"], row["cancelled"], row["other"]) == (0, 0, 0)
    waits = [(j["start_time"] - j["eligible_time"]).total_seconds() for j in tasks]
    assert row["wait_max_s"] == max(waits)
    assert row["longest_wait_task"] is not None
    assert row["longest_wait_task"].startswith("1_")  # as sacct prints it, never the raw id


def test_outcomes_follow_each_tasks_latest_record() -> None:
    jobs = _jobs()
    tasks = sorted((j for j in jobs if j["array_job_id"] is not None), key=lambda j: j["array_task_id"])
    t0 = tasks[0]["submit_time"]
    changed = {
        tasks[0]["job_id"]: [{**tasks[0], "state": "FAILED", "exit_code": 1}],
        # cancelled while pending: never started, so it has no wait
        tasks[1]["job_id"]: [{**tasks[1], "state": "CANCELLED by 0", "start_time": None}],
        # preempted, requeued, then completed after a 4-minute wait (within the captured window): one task, two records
        tasks[2]["job_id"]: [
            {**tasks[2], "state": "PREEMPTED"},
            {
                **tasks[2],
                "state": "COMPLETED",
                "submit_time": t0 + timedelta(minutes=1),
                "eligible_time": t0 + timedelta(minutes=1),
                "start_time": t0 + timedelta(minutes=5),
                "end_time": t0 + timedelta(minutes=6),
            },
        ],
        tasks[3]["job_id"]: [{**tasks[3], "state": "RUNNING", "end_time": None}],
    }
    rows = [r for j in jobs for r in changed.get(j["job_id"], [j])]
    row = array_summary(inputs(jobs=rows, month=MONTH, data_end=END), config("")).row(0, named=True)
    assert (row["tasks"], row["records"], row["started"]) == (6, 7, 6)
    assert (row["completed"], row["failed"], row["cancelled"], row["other"]) == (3, 1, 1, 1)
    assert row["wait_max_s"] == 240.0
    assert row["longest_wait_task"] == f"1_{tasks[2]['array_task_id']}"


def test_jobs_without_arrays_give_no_rows() -> None:
    plain = [j for j in _jobs() if j["array_job_id"] is None]
    assert array_summary(inputs(jobs=plain, month=MONTH, data_end=END), config("")).is_empty()


def test_the_warehouse_stores_and_reads_back_the_months_arrays(tmp_path: Path) -> None:
    ins = inputs(jobs=_jobs(), month=MONTH, data_end=END)
    outputs = evaluate_month(ins, config(""))
    assert outputs.arrays.height == 1
    with open_warehouse(tmp_path / "wh.duckdb") as wh:
        wh.store_month_outputs(outputs)
        wh.store_month_outputs(outputs)  # replaced, never doubled
        back = wh.month_outputs(MONTH)
    assert_frame_equal(back.arrays, outputs.arrays)
    emptied = replace(outputs, arrays=outputs.arrays.clear())
    with open_warehouse(tmp_path / "wh.duckdb") as wh:
        wh.store_month_outputs(emptied)
        assert wh.month_outputs(MONTH).arrays.height == 0
    assert isinstance(back.arrays, pl.DataFrame)
