"""Applied quota changes and a baseline month for the follow-up section.

The review month is the demo month (November 2026). Two changes were applied on 5 October, so
their baseline is September: nlp's west account was raised because west/eval's p95 wait was 10h
(against 1h); in November it is 5h30m, so it moved. vision's east account was lowered because vision
used 1.40x its entitled share; in November it used 1.62x, so it did not move.
"""

from __future__ import annotations

import dataclasses
from datetime import datetime
from typing import Any

import polars as pl

from gpusteward.domain import Month
from sla.followup import AppliedChange
from sla.outputs import MonthOutputs
from sla.results import SLA_RESULTS
from tests.reports.fixtures import demo_outputs

BASELINE = Month(2026, 9)
APPLIED_AT = datetime(2026, 10, 5, 9, 30)

_BASELINE_RESULTS: list[tuple[Any, ...]] = [
    ("evaluation", "queue", "west/eval", "queue_wait_p95", 36000.0, 3600.0, False),
    ("evaluation", "queue_team", "west/eval:nlp", "queue_wait_p95", 36000.0, None, None),
    ("training", "queue", "east/train", "queue_wait_p95", 9000.0, 7200.0, False),  # nlp did not wait there
    ("all", "team", "vision", "share_over_entitlement", 1.40, 1.25, False),
]


def baseline_outputs() -> MonthOutputs:
    results = pl.DataFrame(
        [
            {"month": str(BASELINE), "scenario": s, "subject_kind": k, "subject": n, "indicator": i, "value": v,
             "objective": o, "met": m, "budget_left": None, "rows": 50, "completeness": 1.0, "evidence": "sep"}
            for s, k, n, i, v, o, m in _BASELINE_RESULTS
        ],
        schema=SLA_RESULTS,
    )
    return dataclasses.replace(demo_outputs(), month=BASELINE, results=results)


def raised() -> AppliedChange:
    return AppliedChange(
        "2026-09-abc", "apply-1", "west", "account", "nlp", "nlp", 16, 20, APPLIED_AT, "bob", "alice",
        "Raise nlp's GPU quota on west.", "the queue's wait should fall toward its objective",
    )


def lowered() -> AppliedChange:
    return AppliedChange(
        "2026-09-abc", "apply-1", "east", "account", "vision", "vision", 16, 12, APPLIED_AT, "bob", "alice",
        "Lower vision's GPU quota on east.", "frees up to 4 GPUs on east",
    )
