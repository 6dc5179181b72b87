"""Output contracts of the evaluators, read by alerts/, reports/, quota/ and the dashboards."""

from __future__ import annotations

import polars as pl

from gpusteward.tables import TS, schema

SLA_RESULTS = schema(
    {
        "month": pl.Utf8,  # YYYY-MM
        "scenario": pl.Utf8,
        "subject_kind": pl.Utf8,  # queue | team | service | pool
        "subject": pl.Utf8,  # e.g. "west/eval", "vision", "chat-70b"
        "indicator": pl.Utf8,  # name from gpusteward.indicators.INDICATORS
        "value": pl.Float64,  # in the indicator's unit (seconds for durations); null when no data
        "objective": pl.Float64,  # threshold in the same unit; null when none is configured
        "met": pl.Boolean,  # null when there is no objective or no data
        "budget_left": pl.Float64,  # share of the error budget left (<= 1), null when not applicable
        "rows": pl.Int64,  # rows the value was computed from
        "completeness": pl.Float64,  # 0..1: share of the expected rows that were present
        "evidence": pl.Utf8,  # gpusteward.evidence parts: the rows behind the value (ids, time ranges)
    }
)

BREACH_EPISODES = schema(
    {
        "line": pl.Utf8,  # protection line kind, e.g. inference_reserve
        "subject": pl.Utf8,  # e.g. the cluster name
        "start": TS,
        "end": TS,  # exclusive; equal to the last breaching minute + 1 minute
        "minutes": pl.Int64,
        "worst_value": pl.Float64,  # e.g. the fewest GPUs available to inference
        "threshold": pl.Float64,
        "severity": pl.Utf8,
        "fallback": pl.Utf8,
        "evidence": pl.Utf8,  # gpusteward.evidence parts: which jobs held the GPUs, for how long
    }
)

IDLE_BY_JOB = schema(
    {
        "cluster": pl.Utf8,
        "job_id": pl.Utf8,
        "team": pl.Utf8,
        "scenario": pl.Utf8,
        # GPU-minutes in whole-GPU equivalents (a 1g.10gb MIG instance's minute is 1/7), rounded per job
        "gpu_minutes": pl.Int64,  # GPU-minutes with data while the job held GPUs
        "busy_minutes": pl.Int64,
        "idle_minutes": pl.Int64,  # idle, memory released
        "idle_held_minutes": pl.Int64,  # idle while holding GPU memory above the threshold
        "no_data_minutes": pl.Int64,  # allocated minutes with no telemetry: never idle, never busy
        "util_source": pl.Utf8,  # gr_engine_active | gpu_util | mixed; null when no minute had data
        # GPU-minutes with data at exactly 0 utilisation, in runs of any length (idle counts runs of
        # idle.min_minutes or more, below idle.util_below); null for months stored before migration 016
        "zero_activity_minutes": pl.Int64,
        # a task of a job array: the array's job id and the task's (sacct's `123_4`); null otherwise
        # and for months stored before migration 021
        "array_job_id": pl.Int64,
        "array_task_id": pl.Int64,
    }
)

QUOTA_PLAN_ITEMS = schema(
    {
        "plan_id": pl.Utf8,
        "cluster": pl.Utf8,
        "kind": pl.Utf8,  # account | qos
        "name": pl.Utf8,  # the team's account or QOS
        "team": pl.Utf8,
        "current_gpus": pl.Int32,  # null = unlimited
        "proposed_gpus": pl.Int32,
        "reason": pl.Utf8,
        "evidence": pl.Utf8,
        "expected_effect": pl.Utf8,
    }
)

PLAN_REPLAY = schema(
    {
        "cluster": pl.Utf8,
        "group": pl.Utf8,  # team | queue
        "subject": pl.Utf8,
        "jobs": pl.Int64,
        "observed_p50_s": pl.Float64,
        "observed_p95_s": pl.Float64,
        "observed_gpu_hours": pl.Float64,
        "current_p50_s": pl.Float64,  # replay under the current limits (its gap to observed: calibration)
        "current_p95_s": pl.Float64,
        "current_gpu_hours": pl.Float64,
        "plan_p50_s": pl.Float64,  # replay under the plan
        "plan_p95_s": pl.Float64,
        "plan_gpu_hours": pl.Float64,
    }
)
"""A quota plan's replay per cluster, team and queue (quota.analysis.plan_replay), stored in its body."""

PLAN_PROTECTED = schema(
    {
        "objective": pl.Utf8,  # inference_reserve | queue_wait | scenario_wait
        "cluster": pl.Utf8,
        "subject": pl.Utf8,
        "current": pl.Float64,  # under the current limits (seconds, or records for queue_wait)
        "plan": pl.Float64,  # under the plan
        "threshold": pl.Float64,
        "message": pl.Utf8,  # the stored catalogue message (reports.plan_text)
    }
)
"""The protected objectives a plan's replay makes worse (quota.protected): approved only with an override."""

USAGE = schema(
    {
        "cluster": pl.Utf8,
        "scenario": pl.Utf8,
        "team": pl.Utf8,
        "gpu_hours": pl.Float64,  # allocated GPU-hours of jobs inside the month
        "jobs": pl.Int64,  # job records that held GPUs in the month
    }
)

COMPLETENESS = schema(
    {
        "source": pl.Utf8,  # gpu_minutes | inference_windows | jobs
        "cluster": pl.Utf8,
        "expected": pl.Int64,  # rows expected (e.g. GPU-minutes of the GPUs in inventory)
        "present": pl.Int64,
        "missing": pl.Int64,
        "detail": pl.Utf8,  # gpusteward.evidence parts, e.g. the longest gap: host, GPUs, from, to
    }
)

IDLE_BY_GPU = schema(
    {
        "cluster": pl.Utf8,
        "host": pl.Utf8,
        "gpu": pl.Int16,
        "expected_minutes": pl.Int64,  # minutes the inventory expects the GPU to report in the window
        "busy_minutes": pl.Int64,
        "idle_minutes": pl.Int64,
        "idle_held_minutes": pl.Int64,
        "unallocated_minutes": pl.Int64,  # reported with no job holding the GPU
        "no_data_minutes": pl.Int64,  # expected - the four above: never idle, busy or unallocated
    }
)

LEDGER = schema(
    {
        "ts": TS,  # when it happened
        "action": pl.Utf8,  # preemption | requeue | scale_up | scale_down | reclaim
        "cluster": pl.Utf8,
        "job_id": pl.Int64,  # the job that lost (or, for scale_up, gained) GPUs
        "team": pl.Utf8,
        "scenario": pl.Utf8,
        "gpus": pl.Int32,
        "gpu_hours_held": pl.Float64,  # GPU-hours the run had held when it stopped (the most work at risk)
        "gpu_hours_lost": pl.Float64,  # work lost since the last checkpoint; null when the records do not say
        "gained_job_id": pl.Int64,  # who got the GPUs: the job that started on the same nodes right after
        "gained_team": pl.Utf8,
        "gained_scenario": pl.Utf8,
        "reason": pl.Utf8,
        "evidence": pl.Utf8,
    }
)

DAILY_USAGE = schema(
    {
        "day": pl.Date,  # calendar day in the pool's time zone (sla/daily.py)
        "scenario": pl.Utf8,
        "team": pl.Utf8,
        "gpu_hours": pl.Float64,  # allocated GPU-hours held inside the day (and the evaluation window)
        "util_minutes": pl.Int64,  # allocated GPU-minutes of the day with a utilisation value
        "util_mean": pl.Float64,  # mean utilisation 0..1 over those minutes; null when none
        # allocated GPU-minutes of the day in idle runs (sla.idle_states), memory released / held; null
        # for months stored before migration 025
        "idle_minutes": pl.Int64,
        "idle_held_minutes": pl.Int64,
    }
)

ARRAYS = schema(
    {
        "cluster": pl.Utf8,
        "array_job_id": pl.Int64,  # the array's id: the `123` of its tasks `123_4`
        "name": pl.Utf8,  # job name as the scheduler recorded it
        "scenario": pl.Utf8,
        "team": pl.Utf8,
        "queue": pl.Utf8,  # "<cluster>/<partition>"
        "tasks": pl.Int64,  # distinct tasks with a record in the window
        "records": pl.Int64,  # their records (a requeued task has several)
        "started": pl.Int64,  # records that started in the window
        "completed": pl.Int64,  # tasks whose latest record completed
        "failed": pl.Int64,  # ... ended in one of domain.FAILURE_STATES
        "cancelled": pl.Int64,
        "other": pl.Int64,  # still pending or running, or ended otherwise (preempted)
        "wait_p50_s": pl.Float64,  # eligible -> start of the records that started in the window
        "wait_max_s": pl.Float64,
        "longest_wait_task": pl.Utf8,  # the task that waited longest, as sacct names it (123_4)
    }
)

ACCOUNT_ROLLUP = schema(
    {
        "cluster": pl.Utf8,
        "account": pl.Utf8,
        "parent": pl.Utf8,  # null for a top-level account (under Slurm's root)
        "path": pl.Utf8,  # "research/vision": the account under its ancestors, root left out
        "depth": pl.Int32,  # 0 for a top-level account
        "gpu_limit": pl.Int32,  # its own GrpTRES gres/gpu in the latest tree; null = none of its own
        "peak_gpus_in_use": pl.Int32,  # most GPUs its subtree held at one snapshot (children included)
        "pending_jobs": pl.Int64,  # distinct jobs of its subtree seen pending in the month
        "quota_waits": pl.Int64,  # ... of those, waiting on a quota (AssocGrp*, QOSGrp*)
        "held_by_own_limit": pl.Int64,  # jobs of its subtree held back by this account's own limit
        "held_by_parent": pl.Int64,  # its own jobs held back by an ancestor's limit
        "parent_holding": pl.Utf8,  # the ancestor that held most of them
    }
)

FAILURES = schema(
    {
        "scenario": pl.Utf8,
        "team": pl.Utf8,
        "queue": pl.Utf8,  # "<cluster>/<partition>"
        "name": pl.Utf8,  # job name as the scheduler recorded it
        "state": pl.Utf8,  # the record's final state (first word), one of domain.FAILURE_STATES
        "records": pl.Int64,  # job records that ended in the window in that state (and cause)
        # why, from the state and the exit status (sla/failures.py FAILURE_CAUSES); null for months
        # stored before migration 021
        "cause": pl.Utf8,
    }
)

MONEY = pl.Decimal(18, 2)
"""Costs: exact to the cent (Decimal), in the config's `showback.currency`."""

SHOWBACK = schema(
    {
        "cluster": pl.Utf8,
        "team": pl.Utf8,  # null on an unallocated row, or showback.platform_team under `platform`
        "scenario": pl.Utf8,  # null on an unallocated row
        "account": pl.Utf8,  # the scheduler account; null on an unallocated row
        "kind": pl.Utf8,  # allocated | unallocated (the cluster's capacity nobody was allocated)
        "currency": pl.Utf8,
        "jobs": pl.Int64,  # job records that held GPUs in the window
        "gpu_hours": pl.Float64,  # whole-GPU-equivalent hours allocated (unallocated: capacity - allocated)
        "gpu_cost": MONEY,  # those hours at their GPUs' prices and time-of-day windows
        "idle_gpu_hours": pl.Float64,  # the part of gpu_hours held idle (sla/idle.py: idle and idle-held)
        "idle_cost": MONEY,  # the part of gpu_cost held idle
        "energy_kwh": pl.Float64,  # known energy of the row's GPUs (per card), from DCGM's energy counter
        "energy_cost": MONEY,
        # unallocated cost shared to this row (proportional); minus what was shared on the unallocated row
        "unallocated_share": MONEY,
        "total_cost": MONEY,  # gpu_cost + energy_cost + unallocated_share
        "completeness": pl.Float64,  # allocated GPU-minutes with telemetry / all allocated (unallocated: the cluster's)
        "cluster_completeness": pl.Float64,  # the cluster's GPU-minutes present / expected (COMPLETENESS)
        # GPU-minutes whose energy increase is unknown (the first sample the month's read sees)
        "energy_unknown_minutes": pl.Int64,
        "energy_counter_resets": pl.Int64,  # times the energy counter went down (a driver reload, a reboot)
    }
)
