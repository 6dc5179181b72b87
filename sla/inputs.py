"""What the evaluators read: the month's frames, already loaded by the caller."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

import polars as pl

from gpusteward.domain import Month
from gpusteward.tables import schema

if TYPE_CHECKING:
    from gpusteward.config.schema import IdleConfig
    from sla.minute_digest import MinuteDigest

GPU_INVENTORY = schema(
    {
        "cluster": pl.Utf8,
        "host": pl.Utf8,
        "gpu": pl.Int16,
        "uuid": pl.Utf8,
        "model_name": pl.Utf8,
        "first_seen": pl.Datetime("us"),
        "last_seen": pl.Datetime("us"),
        "share": pl.Float64,  # whole-GPU equivalents of the row: 1, or a MIG instance's slices (1/7 ...)
        "card_gpu": pl.Int16,  # the physical card's device index (a MIG instance's parent)
        "mig_profile": pl.Utf8,  # null for a whole GPU
    }
)


@dataclass(frozen=True)
class EvaluationInputs:
    """Everything one month's evaluation needs. Frames follow gpusteward.tables schemas.

    - jobs: JOBS records whose [start or submit, end) overlaps the month (running jobs have a null end)
    - job_events: JOB_EVENTS of those jobs
    - gpu_minutes: GPU_MINUTES rows with ts in [month.start, month.end); uuid is null and model_name
      is null but on MIG instances' rows, which carry it with their mig_profile (the digest's share;
      they are per GPU: see `gpus`). Empty when `minute_digest` is given.
    - minute_digest: what the evaluators need from those minutes (sla.minute_digest), when the caller
      reduced them already (the warehouse does, a few hosts at a time, so a month of a large fleet
      never sits in memory); else evaluators digest `gpu_minutes` on first use
    - inference_windows: INFERENCE_WINDOWS rows with ts in the month
    - quota_snapshots: QUOTA_SNAPSHOTS up to the month's end
    - gpus: GPU_INVENTORY, every GPU the telemetry has ever shown
    - data_end: the last minute of telemetry the warehouse holds (a month still in progress ends there)
    - rolling: set by sla.evaluator for objectives with a rolling window (sla.common.window_of)
    """

    month: Month
    jobs: pl.DataFrame
    job_events: pl.DataFrame
    gpu_minutes: pl.DataFrame
    inference_windows: pl.DataFrame
    quota_snapshots: pl.DataFrame
    gpus: pl.DataFrame
    data_end: datetime | None
    minute_digest: MinuteDigest | None = None
    rolling: timedelta | None = None  # judge over this rolling window ending at the month's window end
    digest_cache: dict[IdleConfig, MinuteDigest] = field(default_factory=dict, init=False, compare=False, repr=False)
    # sla.common.per_config: frames derived from these inputs and a config (held with it, compared by
    # identity) by name, so the month's dozen evaluators and lines classify the records once, and the
    # ledger (read by the month and by the inference-preemption line) is built once.
    derived_cache: dict[str, list[tuple[object, pl.DataFrame]]] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
