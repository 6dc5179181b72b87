"""The typed tables that cross stage boundaries.

Collectors return frames with these schemas, the warehouse stores them, evaluators read them.
Timestamps are naive `Datetime("us")` values in UTC. Missing telemetry is a missing row or a
null, never a zero.
"""

from __future__ import annotations

from collections.abc import Mapping

import polars as pl
from polars._typing import PolarsDataType

TS = pl.Datetime("us")


def schema(columns: Mapping[str, PolarsDataType]) -> pl.Schema:
    """A polars schema from a column -> type mapping (typed for mypy)."""
    return pl.Schema(columns)


GPU_MINUTES = schema(
    {
        "cluster": pl.Utf8,
        "host": pl.Utf8,
        "gpu": pl.Int16,  # dcgm-exporter `gpu` label: the device index on the host
        "uuid": pl.Utf8,
        "model_name": pl.Utf8,
        "ts": TS,  # start of the minute
        "job_id": pl.Utf8,  # `hpc_job` label (Slurm) or namespace/pod; null when none
        "gpu_util": pl.Float32,  # DCGM_FI_DEV_GPU_UTIL, percent, mean over the minute
        "gr_engine_active": pl.Float32,  # DCGM_FI_PROF_GR_ENGINE_ACTIVE, ratio 0..1, mean
        "fb_used_mib": pl.Float32,  # DCGM_FI_DEV_FB_USED, max over the minute
        "fb_free_mib": pl.Float32,  # DCGM_FI_DEV_FB_FREE, last
        "power_w": pl.Float32,  # DCGM_FI_DEV_POWER_USAGE, mean
        "temp_c": pl.Float32,  # DCGM_FI_DEV_GPU_TEMP, max
        "energy_mj": pl.Float64,  # DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION, last (counter)
        "xid": pl.Int32,  # DCGM_FI_DEV_XID_ERRORS, last non-zero value in the minute, else null
        "mig_profile": pl.Utf8,  # GPU_I_PROFILE of a MIG instance (gpu >= 1000), e.g. 1g.10gb; else null
    }
)
GPU_MINUTES_KEY = ("cluster", "host", "gpu", "ts")

JOBS = schema(
    {
        "cluster": pl.Utf8,
        "job_id": pl.Int64,
        "submit_time": TS,  # with job_id: one record of a job (requeues get a new submit time)
        "name": pl.Utf8,
        "user": pl.Utf8,
        "account": pl.Utf8,
        "partition": pl.Utf8,
        "qos": pl.Utf8,
        "priority": pl.Int64,
        "eligible_time": TS,
        "start_time": TS,  # null while pending or when cancelled before start
        "end_time": TS,
        "state": pl.Utf8,  # sacct state string, e.g. COMPLETED, PREEMPTED, REQUEUED
        "reason": pl.Utf8,
        # sacct's ExitCode `return code:signal`, kept apart: a job a signal ended has no return code
        # (`0:9` -> null, signal 9; `137:0` is a script that exited 137 -> 137, no signal); null
        # when the source is known to misreport it (22.05 JSON)
        "exit_code": pl.Int32,
        "gpus_requested": pl.Int32,
        "gpus_allocated": pl.Int32,
        "gpu_type": pl.Utf8,
        "nodes": pl.Utf8,  # hostlist expression as Slurm prints it
        "time_limit_min": pl.Int64,
        "comment": pl.Utf8,  # free text; fine-tuning reproducibility fields live here
        "array_job_id": pl.Int64,  # a task of an array: the array's job id (JobID 123_4 -> 123); else null
        "array_task_id": pl.Int64,  # ... and its task id (4); job_id is the task's own (JobIDRaw)
        "exit_signal": pl.Int32,  # the signal that ended the job (9 SIGKILL, 6 SIGABRT, 15 SIGTERM); else null
        # the allocation in whole-GPU equivalents where the scheduler gave fractions (MIG slices, shards,
        # GPU fractions); null: gpus_allocated whole GPUs (gpusteward.capacity.held_gpus)
        "gpu_equivalents": pl.Float64,
        # the advanced reservation the job ran in ("" when it ran in none; null when the source does not
        # say: a `sacct -P` dump without the Reservation column, records stored before migration 030)
        "reservation": pl.Utf8,
        # the scheduler's labels as a JSON object (`{}` for Slurm, which has none; null when unknown)
        "labels": pl.Utf8,
        # the scheduler's own name of a job whose name is not a number: `namespace/name` of a Kueue Workload
        # (job_id is then a digest of it, collectors.kube.kueue_jobs); null for Slurm records
        "job_ref": pl.Utf8,
    }
)
JOBS_KEY = ("cluster", "job_id", "submit_time")

JOB_EVENTS = schema(
    {
        "cluster": pl.Utf8,
        "job_id": pl.Int64,
        "ts": TS,
        "event": pl.Utf8,  # submit | start | preempt | requeue | end
        "state": pl.Utf8,
        "reason": pl.Utf8,
        "gpus": pl.Int32,
    }
)
JOB_EVENTS_KEY = ("cluster", "job_id", "ts", "event")

INFERENCE_WINDOWS = schema(
    {
        "cluster": pl.Utf8,
        "service": pl.Utf8,  # model name as the server labels it
        "instance": pl.Utf8,  # one replica: host:port or pod
        "ts": TS,  # end of the window
        "window_s": pl.Int32,
        "requests": pl.Float64,  # finished requests in the window (counter increase)
        "errors": pl.Float64,  # of which errored (finished_reason=abort/error or 5xx)
        "e2e_le": pl.List(pl.Float64),  # bucket upper bounds, ascending, +Inf last
        "e2e_counts": pl.List(pl.Float64),  # cumulative bucket increases over the window
        "e2e_sum": pl.Float64,
        "ttft_le": pl.List(pl.Float64),
        "ttft_counts": pl.List(pl.Float64),
        "ttft_sum": pl.Float64,
        "prompt_tokens": pl.Float64,
        "generation_tokens": pl.Float64,
        "running": pl.Float64,  # gauge, last value in the window
        "waiting": pl.Float64,
        "kv_cache_usage": pl.Float64,  # ratio 0..1
    }
)
INFERENCE_WINDOWS_KEY = ("cluster", "service", "instance", "ts")

QUOTA_SNAPSHOTS = schema(
    {
        "cluster": pl.Utf8,
        "ts": TS,
        "kind": pl.Utf8,  # qos | account | partition
        "name": pl.Utf8,
        "gpu_limit": pl.Int32,  # GrpTRES gres/gpu; null = unlimited
        "priority": pl.Int64,
    }
)
QUOTA_SNAPSHOTS_KEY = ("cluster", "ts", "kind", "name")

QUOTA_USAGE = schema(
    {
        "cluster": pl.Utf8,
        "ts": TS,
        "kind": pl.Utf8,  # qos | account | partition
        "name": pl.Utf8,
        "gpus_in_use": pl.Int32,  # GPUs held by running jobs at ts, against that quota's gpu_limit
        "jobs_running": pl.Int32,
        "jobs_pending": pl.Int32,
    }
)
QUOTA_USAGE_KEY = ("cluster", "ts", "kind", "name")

# The Slurm account tree at a time: which account is whose child, and each one's own GPU limits.
ACCOUNT_TREE = schema(
    {
        "cluster": pl.Utf8,
        "ts": TS,
        "account": pl.Utf8,
        "parent": pl.Utf8,  # ParentName / parent_account; null for the root
        "gpu_limit": pl.Int32,  # the account's own GrpTRES gres/gpu; null = none of its own
        "gpu_type_limits": pl.Utf8,  # typed GrpTRES limits as Slurm prints them, e.g. "h100=3"; null = none
    }
)
ACCOUNT_TREE_KEY = ("cluster", "ts", "account")

# Jobs waiting in the live queue at a time, with the reason Slurm gives (AssocGrpGRES, Priority, ...).
PENDING_JOBS = schema(
    {
        "cluster": pl.Utf8,
        "ts": TS,
        "job_id": pl.Int64,
        "array_job_id": pl.Int64,
        "array_task_id": pl.Int64,
        "user": pl.Utf8,
        "account": pl.Utf8,
        "partition": pl.Utf8,
        "qos": pl.Utf8,
        "gpus_requested": pl.Int32,
        "reason": pl.Utf8,
        "submit_time": TS,
        "eligible_time": TS,
        "gpu_type": pl.Utf8,  # the GPU type asked (`gres/gpu:<type>`), comma-separated when several; null: any
    }
)
PENDING_JOBS_KEY = ("cluster", "ts", "job_id")


def empty(schema: pl.Schema) -> pl.DataFrame:
    return pl.DataFrame(schema=schema)


def conform(frame: pl.DataFrame, schema: pl.Schema) -> pl.DataFrame:
    """Select and cast `frame` to `schema`, adding null columns it lacks."""
    cols = [
        (pl.col(name) if name in frame.columns else pl.lit(None)).cast(dtype).alias(name)
        for name, dtype in schema.items()
    ]
    return frame.select(cols)
