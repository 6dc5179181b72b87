"""Failed job records per scenario, team, queue, name and final state."""

from __future__ import annotations

import polars as pl

from sla.failures import failures
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
        ("training", "nlp", "east/train", "sweep", "FAILED", 2),
        ("online_inference", "vision", "east/infer", "probe", "NODE_FAIL", 1),
        ("training", "nlp", "east/train", "sweep", "TIMEOUT", 1),
    ]


def test_no_failures_gives_an_empty_frame_with_the_schema() -> None:
    out = failures(inputs(jobs=[job(1)]), config())
    assert out.is_empty()
    assert out.schema == FAILURES
    assert out.filter(pl.col("records") > 0).is_empty()
