"""What the reclaim evaluator reads at one instant, and the plan it returns.

The frames are the warehouse's (gpusteward.tables) cut around `now`:
- running: JOBS records running at `now` (started, not ended); optional extra columns `labels`
  (a struct or a map of label -> value) and `reservation`, where the scheduler records them
- waiting: jobs waiting for GPUs at `now` (WAITING_JOBS), with the partitions and GPU type they can use
- gpu_minutes: GPU_MINUTES rows with ts in [window_start, now)
- inference_windows: INFERENCE_WINDOWS rows with ts in (window_start, now]
- warned: the latest warning of each job's current run per policy (WARNED), from the reclaim ledger
- exempted: jobs a team lead exempted through the control API (EXEMPTED), until `until` (null: for good)
- recent_actions: taking actions of the last hour per cluster (RECENT_ACTIONS), for the cap
- acted: the runs the ledger already holds an action for (ACTED), which the cap does not rank again
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta

import polars as pl

from gpusteward.config.schema import Config
from gpusteward.tables import TS, schema

WAITING_JOBS = schema({
    "cluster": pl.Utf8, "job_id": pl.Int64, "gpus_requested": pl.Int32,
    "partition": pl.Utf8,  # the partitions it may run in (Slurm: comma-separated); null: not said, any
    "gpu_type": pl.Utf8,  # the GPU model it asks for (comma-separated when several); null: not said, any
})
"""Who waits: `partition` and `gpu_type` say where it can run, so an idle job is reclaimed only for jobs that
could take its GPUs (sla.reclaim.waiting_for); a record that does not say matches every job of the cluster."""
WARNED = schema({"cluster": pl.Utf8, "job_id": pl.Utf8, "policy": pl.Utf8, "warned_at": TS, "run_start": TS})
"""`run_start`: the start of the run the warning was about (null: any run); a warning about an earlier run
of a requeued job does not count for the current one."""
RECENT_ACTIONS = schema({"cluster": pl.Utf8, "at": TS})
EXEMPTED = schema({"cluster": pl.Utf8, "job_id": pl.Utf8, "until": TS, "by": pl.Utf8})
ACTED = schema({"cluster": pl.Utf8, "job_id": pl.Utf8, "policy": pl.Utf8, "run_start": TS})
"""Runs already acted on under a policy (the ledger's actions, less those dropped as stale): the cap ranks
only the candidates still to be acted on."""

RECLAIM_PLAN = schema({
    "cluster": pl.Utf8,
    "job_id": pl.Utf8,
    "job": pl.Utf8,  # as the owner knows it: `123_4` for an array task
    "run_start": TS,  # the running record's start: a requeued job's next run is a new episode
    "user": pl.Utf8,
    "account": pl.Utf8,
    "team": pl.Utf8,
    "scenario": pl.Utf8,
    "policy": pl.Utf8,
    "when": pl.Utf8,
    "gpus": pl.Int32,
    "verdict": pl.Utf8,  # candidate | capped | paused | left_alone
    "reason": pl.Utf8,  # why a job is left alone (null for the others): see REASONS
    "idle_since": TS,  # the first minute of the current idle stretch (null when not idle)
    "idle_since_clipped": pl.Boolean,  # idle since before window_start: at least that long
    "idle_minutes": pl.Int64,
    "stage": pl.Utf8,  # warn | grace | act | warned (candidates, capped and paused only)
    "action": pl.Utf8,
    "mode": pl.Utf8,
    "warn_at": TS,  # when the warning fell due
    "action_due": TS,  # when the action falls due (notify: the warning's time)
    "waiting_jobs": pl.Int64,  # idle_while_waiting: jobs waiting for GPUs in the cluster
    "waiting_gpus": pl.Int64,
    "service": pl.Utf8,  # no_traffic: the inference service
    "util_source": pl.Utf8,  # gr_engine_active | gpu_util | mixed (minute-based conditions)
})

VERDICTS = ("candidate", "capped", "paused", "left_alone")
REASONS = (
    "busy", "no_data", "partial_data", "idle_too_short", "nobody_waiting", "no_service", "min_replicas",
    "inference_reserve", "exempt_account", "exempt_qos", "exempt_user", "exempt_name", "exempt_label",
    "exempt_reservation", "exemption_unknown", "exempt_objection",
)
"""Why a covered job is left alone; each has `reclaim.reason.<code>` in the service catalogues."""

LOOKBACK_MARGIN = timedelta(hours=1)


def lookback(config: Config) -> timedelta:
    """How much history before `now` the plan reads: the longest `idle_for` and an hour, so an idle
    stretch that qualifies is seen whole (and one older than that is reported as at least that long)."""
    longest = max((p.idle_for for p in config.reclaim.policies), default=timedelta(hours=1))
    return longest + LOOKBACK_MARGIN


@dataclass(frozen=True)
class ReclaimInputs:
    now: datetime
    window_start: datetime
    running: pl.DataFrame
    waiting: pl.DataFrame
    gpu_minutes: pl.DataFrame
    inference_windows: pl.DataFrame
    warned: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=WARNED))
    recent_actions: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=RECENT_ACTIONS))
    exempted: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=EXEMPTED))
    acted: pl.DataFrame = field(default_factory=lambda: pl.DataFrame(schema=ACTED))
