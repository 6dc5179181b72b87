"""The catalogue of SLA indicators: unit, direction and the scenarios that may use each."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from gpusteward.domain import Scenario


class Unit(StrEnum):
    DURATION = "duration"  # seconds in results; written as "30m" in configs
    RATIO = "ratio"  # 0..1
    GPU_HOURS = "gpu_hours"
    COUNT = "count"


class Direction(StrEnum):
    AT_MOST = "at_most"  # the value meets its objective when value <= threshold
    AT_LEAST = "at_least"


@dataclass(frozen=True)
class Indicator:
    name: str
    unit: Unit
    direction: Direction
    scenarios: frozenset[Scenario]
    help: str


_BATCHLIKE = frozenset(
    {Scenario.TRAINING, Scenario.FINE_TUNING, Scenario.EVALUATION, Scenario.BATCH_INFERENCE, Scenario.GENERAL_COMPUTE}
)
_ALL = frozenset(Scenario)

INDICATORS: dict[str, Indicator] = {
    i.name: i
    for i in (
        Indicator(
            "queue_wait_p50",
            Unit.DURATION,
            Direction.AT_MOST,
            _BATCHLIKE,
            "median time from eligible to start, per queue",
        ),
        Indicator(
            "queue_wait_p95",
            Unit.DURATION,
            Direction.AT_MOST,
            _BATCHLIKE,
            "95th percentile time from eligible to start, per queue",
        ),
        Indicator(
            "queue_wait_max",
            Unit.DURATION,
            Direction.AT_MOST,
            _BATCHLIKE,
            "longest wait of any job in the month (starvation), per queue",
        ),
        Indicator(
            "success_rate",
            Unit.RATIO,
            Direction.AT_LEAST,
            _BATCHLIKE,
            "share of finished records that COMPLETED, per queue",
        ),
        Indicator(
            "latency_p95",
            Unit.DURATION,
            Direction.AT_MOST,
            frozenset({Scenario.ONLINE_INFERENCE}),
            "95th percentile end-to-end request latency, per service",
        ),
        Indicator(
            "latency_p99",
            Unit.DURATION,
            Direction.AT_MOST,
            frozenset({Scenario.ONLINE_INFERENCE}),
            "99th percentile end-to-end request latency, per service",
        ),
        Indicator(
            "ttft_p99",
            Unit.DURATION,
            Direction.AT_MOST,
            frozenset({Scenario.ONLINE_INFERENCE}),
            "99th percentile time to first token, per service",
        ),
        Indicator(
            "error_rate",
            Unit.RATIO,
            Direction.AT_MOST,
            frozenset({Scenario.ONLINE_INFERENCE}),
            "share of requests that failed, per service",
        ),
        Indicator(
            "time_to_gpu_p95",
            Unit.DURATION,
            Direction.AT_MOST,
            frozenset({Scenario.INTERACTIVE}),
            "95th percentile time from submit to start of a session",
        ),
        Indicator(
            "idle_gpu_hours",
            Unit.GPU_HOURS,
            Direction.AT_MOST,
            frozenset({Scenario.INTERACTIVE}),
            "GPU-hours allocated but idle, per team",
        ),
        Indicator(
            "share_over_entitlement",
            Unit.RATIO,
            Direction.AT_MOST,
            _ALL,
            "GPU-hours used as a multiple of the team's entitled share (1.0 = exactly its share)",
        ),
    )
}
