"""Who held each GPU-minute: the job, team and scenario, from labels, else allocations, else nobody.

Pure: frames in, frames out. Order of evidence per GPU-minute:
1. `label`: the minute's `job_id` (dcgm-exporter's `hpc_job`, or `namespace/pod` from pod labels)
   names a job in `jobs`;
2. `allocation`: a scheduler allocation covers the GPU at that minute (Slurm GPU indices per node,
   `start <= ts < end`);
3. `unattributed`: neither; team and scenario are "unattributed". These minutes are kept and
   counted (`unattributed_summary`), never dropped. A label naming a job `jobs` does not know
   keeps its `job_id` but is unattributed too.
"""

from __future__ import annotations

import polars as pl

from gpusteward import tables
from gpusteward.domain import UNATTRIBUTED

# jobs: one row per job id (Slurm id as text, or namespace/pod) with its team and scenario.
JOB_OWNERS = tables.schema({"cluster": pl.Utf8, "job_id": pl.Utf8, "team": pl.Utf8, "scenario": pl.Utf8})
# allocations: the GPUs a job held on a node, and when.
ALLOCATIONS = tables.schema(
    {"cluster": pl.Utf8, "host": pl.Utf8, "gpu": pl.Int16, "job_id": pl.Utf8, "start": tables.TS, "end": tables.TS}
)
_KEY = ["cluster", "host", "gpu", "ts"]


def attribution_gpu_minutes(minutes: pl.DataFrame, jobs: pl.DataFrame, allocations: pl.DataFrame) -> pl.DataFrame:
    """GPU_MINUTES key columns plus `job_id`, `team`, `scenario` and `attributed_by`, one row per minute."""
    base = minutes.select(*_KEY, pl.col("job_id").alias("label_job"))
    owners = tables.conform(jobs, JOB_OWNERS)
    alloc = tables.conform(allocations, ALLOCATIONS)
    held = (
        base.join(alloc, on=["cluster", "host", "gpu"], how="inner")
        .filter((pl.col("ts") >= pl.col("start")) & (pl.col("ts") < pl.col("end")))
        .group_by(_KEY)
        .agg(pl.col("job_id").sort().last().alias("alloc_job"))  # overlapping allocations: one, deterministically
    )
    labelled = owners.rename({"job_id": "label_job", "team": "label_team", "scenario": "label_scenario"})
    allocated = owners.rename({"job_id": "alloc_job", "team": "alloc_team", "scenario": "alloc_scenario"})
    out = (
        base.join(labelled, on=["cluster", "label_job"], how="left")
        .join(held, on=_KEY, how="left")
        .join(allocated, on=["cluster", "alloc_job"], how="left")
    )
    by_label = pl.col("label_team").is_not_null()
    by_alloc = ~by_label & pl.col("alloc_team").is_not_null()
    return out.select(
        *_KEY,
        pl.when(by_label | pl.col("label_job").is_not_null())
        .then(pl.col("label_job"))
        .otherwise(pl.col("alloc_job"))
        .alias("job_id"),
        pl.when(by_label)
        .then(pl.col("label_team"))
        .when(by_alloc)
        .then(pl.col("alloc_team"))
        .otherwise(pl.lit(UNATTRIBUTED))
        .alias("team"),
        pl.when(by_label)
        .then(pl.col("label_scenario"))
        .when(by_alloc)
        .then(pl.col("alloc_scenario"))
        .otherwise(pl.lit(UNATTRIBUTED))
        .alias("scenario"),
        pl.when(by_label)
        .then(pl.lit("label"))
        .when(by_alloc)
        .then(pl.lit("allocation"))
        .otherwise(pl.lit(UNATTRIBUTED))
        .alias("attributed_by"),
    ).sort(_KEY)


def unattributed_summary(attributed: pl.DataFrame) -> pl.DataFrame:
    """GPU-minutes per cluster and evidence (`label`, `allocation`, `unattributed`), for display."""
    return (
        attributed.group_by("cluster", "attributed_by")
        .agg(pl.len().alias("gpu_minutes"))
        .sort("cluster", "attributed_by")
    )
