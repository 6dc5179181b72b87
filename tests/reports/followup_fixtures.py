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
from reports.model import Message, Quantity, Text
from reports.plan_text import encode
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


def _effect(team: str, cluster: str, p95: tuple[float, float], hours: tuple[float, float]) -> str:
    """An expected effect stored as the recommender stores it: catalogue messages, not sentences."""
    def wait(s: float) -> Quantity:
        return Quantity(s, "duration")

    def held(h: float) -> Quantity:
        return Quantity(h, "gpu_hours")

    return encode([Message("quota.effect.replay", (
        ("team", Text(team)), ("cluster", Text(cluster)), ("p95_before", wait(p95[0])), ("p95_after", wait(p95[1])),
        ("p50_before", wait(p95[0] / 3)), ("p50_after", wait(p95[1] / 3)), ("hours_before", held(hours[0])),
        ("hours_after", held(hours[1])), ("observed", wait(p95[0])), ("error", wait(600)),
    ))])


# The plan's replay rows (sla.results.PLAN_REPLAY) for the teams its effects name.
_REPLAY = (
    {"cluster": "east", "group": "team", "subject": "vision", "observed_p95_s": 9000.0, "current_p95_s": 9600.0,
     "plan_p95_s": 7200.0},
    {"cluster": "west", "group": "team", "subject": "nlp", "observed_p95_s": 36000.0, "current_p95_s": 36600.0,
     "plan_p95_s": 9000.0},
)


def raised() -> AppliedChange:
    reason = encode([Message("quota.reason.raise", (("team", Text("nlp")), ("cluster", Text("west"))))])
    return AppliedChange(
        "2026-09-abc", "apply-1", "west", "account", "nlp", "nlp", 16, 20, APPLIED_AT, "bob", "alice",
        reason, _effect("nlp", "west", (36000, 9000), (1800, 2100)), replay=_REPLAY,
    )


def lowered() -> AppliedChange:
    reason = encode([Message("quota.reason.fairness", (
        ("team", Text("vision")), ("cluster", Text("east")), ("multiple", Quantity(1.4, "multiple"))))])
    return AppliedChange(
        "2026-09-abc", "apply-1", "east", "account", "vision", "vision", 16, 12, APPLIED_AT, "bob", "alice",
        reason, _effect("vision", "east", (9000, 7200), (900, 780)), replay=_REPLAY,
    )
