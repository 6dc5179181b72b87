"""Failed job records per scenario, team, queue, name and final state."""

from __future__ import annotations

import polars as pl

from sla.failures import FAILURE_CAUSES, failures
from sla.results import FAILURES
from tests.sla.builders import config, inputs, job

DAY = 24 * 60


def test_only_records_that_ended_in_the_month_in_a_failure_state_count() -> None:
    jobs = [
        job(1, state="FAILED", name="sweep"),
        job(2, state="FAILED", name="sweep", submit=5),  # a requeued attempt: its own record
        job(3, state="TIMEOUT", name="sweep"),
        job(4, state="CANCELLED by 1000", name="sweep"),
        job(5, state="PREEMPTED", name="sweep"),
        job(6, state="COMPLETED", name="sweep"),
        job(7, state="NODE_FAIL", name="probe", account="vision", partition="infer"),
        job(8, state="FAILED", name="old", submit=-DAY, start=-DAY, end=-60),  # ended before the month
        job(9, state="FAILED", name="running", end=None),
    ]
    out = failures(inputs(jobs=jobs), config())
    assert out.schema == FAILURES
    assert out.rows() == [
        ("training", "nlp", "east/train", "sweep", "FAILED", 2, "unknown"),  # no exit status stored
        ("online_inference", "vision", "east/infer", "probe", "NODE_FAIL", 1, "node_failure"),
        ("training", "nlp", "east/train", "sweep", "TIMEOUT", 1, "time_limit"),
    ]


def test_each_failed_record_gets_its_cause_from_state_and_exit_status() -> None:
    """sacct's ExitCode `code:signal` as stored (exit_code, exit_signal): 0:9 and a shell's 137 are
    SIGKILL (the OOM killer, most often), 0:6 and 134 SIGABRT (NCCL's watchdog), 1:0 the job's error."""
    cases = {
        1: ("FAILED", 1, None, "exit_error"),
        2: ("FAILED", None, 9, "out_of_memory"),
        3: ("FAILED", 137, None, "out_of_memory"),
        4: ("OUT_OF_MEMORY", 0, None, "out_of_memory"),
        5: ("FAILED", None, 6, "aborted"),
        6: ("FAILED", 134, None, "aborted"),
        7: ("FAILED", None, 11, "signal"),
        8: ("NODE_FAIL", None, None, "node_failure"),
        9: ("TIMEOUT", 0, None, "time_limit"),
        10: ("FAILED", 0, None, "unknown"),
        11: ("FAILED", None, None, "unknown"),
        12: ("BOOT_FAIL", 1, None, "node_failure"),
    }
    jobs = [job(i, state=state, name=f"j{i}", exit_code=code, exit_signal=signal)
            for i, (state, code, signal, _) in cases.items()]
    out = failures(inputs(jobs=jobs), config())
    assert dict(out.select("name", "cause").rows()) == {f"j{i}": c[3] for i, c in cases.items()}
    assert set(out["cause"]) <= set(FAILURE_CAUSES)


def test_no_failures_gives_an_empty_frame_with_the_schema() -> None:
    out = failures(inputs(jobs=[job(1)]), config())
    assert out.is_empty()
    assert out.schema == FAILURES
    assert out.filter(pl.col("records") > 0).is_empty()
