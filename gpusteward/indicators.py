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


class Judgement(StrEnum):
    """How an objective on the indicator is judged over its window (docs/evaluation.md#objectives).

    - EVENTS: each event (a job's wait, a request's latency) is good when it is within the threshold;
      the objective is met when the good share reaches the objective's `target` (the SLI of the
      Google SRE workbook, Sloth and Pyrra). The value shown is the percentile the name says.
    - SHARE: the value is itself a share of good events (COMPLETED records, slots up); the threshold
      is the share required, so a separate target does not apply.
    - LEVEL: a total or level over the window (GPU-hours, counts); met when value meets threshold.
    """

    EVENTS = "events"
    SHARE = "share"
    LEVEL = "level"


@dataclass(frozen=True)
class Indicator:
    name: str
    unit: Unit
    direction: Direction
    scenarios: frozenset[Scenario]
    help: str
    percentile: float | None = None  # EVENTS indicators: the quantile shown, and the default target
    digest: bool = False  # computed from the month's minute digest: judged over the calendar month only

    @property
    def judgement(self) -> Judgement:
        if self.percentile is not None:
            return Judgement.EVENTS
        return Judgement.SHARE if self.name in SHARES else Judgement.LEVEL


SHARES = frozenset({
    "success_rate", "preemption_rate", "reproducible_share", "within_deadline", "record_completeness",
    "error_rate", "availability", "telemetry_completeness",
})
"""Ratio indicators that count good (or bad) events: their threshold is the share required."""

_BATCHLIKE = frozenset(
    {Scenario.TRAINING, Scenario.FINE_TUNING, Scenario.EVALUATION, Scenario.BATCH_INFERENCE, Scenario.GENERAL_COMPUTE}
)
_ALL = frozenset(Scenario)
_INFERENCE = frozenset({Scenario.ONLINE_INFERENCE})
_INTERACTIVE = frozenset({Scenario.INTERACTIVE})

INDICATORS: dict[str, Indicator] = {
    i.name: i
    for i in (
        Indicator(
            "queue_wait_p50",
            Unit.DURATION,
            Direction.AT_MOST,
            _BATCHLIKE,
            "median time from eligible to start, per queue",
            percentile=0.5,
        ),
        Indicator(
            "queue_wait_p95",
            Unit.DURATION,
            Direction.AT_MOST,
            _BATCHLIKE,
            "95th percentile time from eligible to start, per queue",
            percentile=0.95,
        ),
        Indicator(
            "queue_wait_max",
            Unit.DURATION,
            Direction.AT_MOST,
            _BATCHLIKE,
            "longest wait of any job in the month (starvation), per queue",
            percentile=1.0,
        ),
        Indicator(
            "success_rate",
            Unit.RATIO,
            Direction.AT_LEAST,
            _BATCHLIKE,
            "share of finished records that COMPLETED, per queue",
        ),
        Indicator(
            "preemptions",
            Unit.COUNT,
            Direction.AT_MOST,
            _BATCHLIKE,
            "records that ended PREEMPTED or REQUEUED in the month, per queue",
        ),
        Indicator(
            "preemption_rate",
            Unit.RATIO,
            Direction.AT_MOST,
            _BATCHLIKE,
            "preempted records / records that started in the month, per queue",
        ),
        Indicator(
            "preempted_gpu_hours",
            Unit.GPU_HOURS,
            Direction.AT_MOST,
            _BATCHLIKE,
            "GPU-hours the preempted runs had held when they were stopped (work at risk), per queue",
        ),
        Indicator(
            "recovery_time_p95",
            Unit.DURATION,
            Direction.AT_MOST,
            _BATCHLIKE,
            "95th percentile time from a preemption or failure back to running, per queue",
            percentile=0.95,
        ),
        Indicator(
            "reproducible_share",
            Unit.RATIO,
            Direction.AT_LEAST,
            frozenset({Scenario.FINE_TUNING}),
            "share of records whose job fields carry every configured reproducibility key, per queue",
        ),
        Indicator(
            "within_deadline",
            Unit.RATIO,
            Direction.AT_LEAST,
            _BATCHLIKE,
            "share of COMPLETED records that finished within the deadline of their submission, per queue",
        ),
        Indicator(
            "completed_per_gpu_hour",
            Unit.COUNT,
            Direction.AT_LEAST,
            _BATCHLIKE,
            "throughput: COMPLETED records per GPU-hour held in the month, per queue",
        ),
        Indicator(
            "gpu_efficiency",
            Unit.RATIO,
            Direction.AT_LEAST,
            _BATCHLIKE,
            "mean compute utilisation (0..1) of the GPU-minutes with data while allocated, per queue",
            digest=True,
        ),
        Indicator(
            "record_completeness",
            Unit.RATIO,
            Direction.AT_LEAST,
            _BATCHLIKE,
            "share of started records that carry eligible time, GPUs allocated and an end or running state",
        ),
        Indicator(
            "latency_p95",
            Unit.DURATION,
            Direction.AT_MOST,
            _INFERENCE,
            "95th percentile end-to-end request latency, per service",
            percentile=0.95,
        ),
        Indicator(
            "latency_p99",
            Unit.DURATION,
            Direction.AT_MOST,
            _INFERENCE,
            "99th percentile end-to-end request latency, per service",
            percentile=0.99,
        ),
        Indicator(
            "ttft_p95",
            Unit.DURATION,
            Direction.AT_MOST,
            _INFERENCE,
            "95th percentile time to first token, per service",
            percentile=0.95,
        ),
        Indicator(
            "ttft_p99",
            Unit.DURATION,
            Direction.AT_MOST,
            _INFERENCE,
            "99th percentile time to first token, per service",
            percentile=0.99,
        ),
        Indicator(
            "error_rate",
            Unit.RATIO,
            Direction.AT_MOST,
            _INFERENCE,
            "share of requests that failed, per service",
        ),
        Indicator(
            "availability",
            Unit.RATIO,
            Direction.AT_LEAST,
            _INFERENCE,
            "share of the service's 5-minute slots in which a replica answered and most requests succeeded",
        ),
        Indicator(
            "throughput_rps",
            Unit.COUNT,
            Direction.AT_LEAST,
            _INFERENCE,
            "requests per second over the month, per service",
        ),
        Indicator(
            "reserve_headroom_gpus",
            Unit.COUNT,
            Direction.AT_LEAST,
            _INFERENCE,
            "fewest GPUs available to inference minus the reserve line's minimum, per cluster (< 0: breached)",
        ),
        Indicator(
            "replicas",
            Unit.COUNT,
            Direction.AT_LEAST,
            _INFERENCE,
            "median number of replicas answering per 5-minute slot, per service",
        ),
        Indicator(
            "gpus_serving",
            Unit.COUNT,
            Direction.AT_LEAST,
            _INFERENCE,
            "GPUs held by the online-inference jobs serving the service, averaged over the month",
        ),
        Indicator(
            "capacity_headroom",
            Unit.RATIO,
            Direction.AT_LEAST,
            _INFERENCE,
            "share of its capacity a service still had at busy times (1 - p95 load / saturation load)",
        ),
        Indicator(
            "time_to_gpu_p95",
            Unit.DURATION,
            Direction.AT_MOST,
            _INTERACTIVE,
            "95th percentile time from submit to start of a session",
            percentile=0.95,
        ),
        Indicator(
            "idle_gpu_hours",
            Unit.GPU_HOURS,
            Direction.AT_MOST,
            _INTERACTIVE,
            "GPU-hours allocated but idle, per team",
            digest=True,
        ),
        Indicator(
            "sessions_not_reclaimed",
            Unit.COUNT,
            Direction.AT_MOST,
            _INTERACTIVE,
            "sessions that stayed idle past the idle limit or ran past the lifecycle limit, per team",
            digest=True,
        ),
        Indicator(
            "share_over_entitlement",
            Unit.RATIO,
            Direction.AT_MOST,
            _ALL,
            "GPU-hours used as a multiple of the team's entitled share (1.0 = exactly its share)",
        ),
        Indicator(
            "jain_index",
            Unit.RATIO,
            Direction.AT_LEAST,
            _ALL,
            "Jain's fairness index over the teams' share_over_entitlement (1 = every team at the same multiple)",
        ),
        Indicator(
            "telemetry_completeness",
            Unit.RATIO,
            Direction.AT_LEAST,
            _ALL,
            "share of a host's expected GPU-minutes that have telemetry",
            digest=True,
        ),
    )
}
