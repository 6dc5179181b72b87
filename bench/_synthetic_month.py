"""A month of GPU-minutes for a fleet of any size, written through `Warehouse.ingest` (bench helper).

The simulator and importer need about 10 minutes for a month of 1,000 GPUs; bench/service.py needs
the month only as the load a concurrent evaluation reads and digests, so it writes arithmetic
values (utilisation, memory, power, an energy counter) a day per batch, about 260k rows a second.
The job records (`job_records`, written by `write_jobs`) are those the telemetry's job labels name: every
fourth GPU has no job, the other three of each four run one job the whole month (250 jobs on 1,000 GPUs),
a tenth of them failing at the end (so the dashboard's job page has a failed job to open, as its browser
test picks one). bench/service.py leaves them out: the evaluation's telemetry path (reading and digesting
every GPU-minute) is the part that scales with the fleet.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import polars as pl

from gpusteward import tables
from warehouse import Warehouse

GPUS_PER_NODE = 8
CLUSTER = "synthetic"
FIRST_JOB = 100_000
ACCOUNTS = ("nlp", "vision", "speech", "research", "platform")  # the example config's teams
PARTITIONS = ("train", "finetune", "eval", "batch", "general")  # ... and the partitions its rules classify


def day_frame(day: datetime, gpus: int) -> pl.DataFrame:
    """Every GPU's 1,440 minutes of `day` (UTC midnight)."""
    minutes = pl.int_range(0, 1440, eager=True).alias("m")
    fleet = pl.DataFrame({"g": pl.int_range(0, gpus, eager=True)})
    base = int(day.timestamp() // 60)
    rows = fleet.join(minutes.to_frame(), how="cross")
    wave = ((pl.col("m") + pl.col("g") * 37) % 1440).cast(pl.Float32)
    return rows.select(
        pl.lit(CLUSTER).alias("cluster"),
        pl.format("synthetic-gpu-{}", (pl.col("g") // GPUS_PER_NODE).cast(pl.Utf8).str.zfill(4)).alias("host"),
        (pl.col("g") % GPUS_PER_NODE).cast(pl.Int16).alias("gpu"),
        pl.format("GPU-synthetic-{}", pl.col("g")).alias("uuid"),
        pl.lit("NVIDIA H100 80GB HBM3").alias("model_name"),
        (pl.lit(day.replace(tzinfo=None)) + pl.duration(minutes=pl.col("m"))).alias("ts"),
        pl.when(pl.col("g") % 4 != 0).then(pl.format("{}", FIRST_JOB + pl.col("g") // 4)).alias("job_id"),
        (wave / 14.4).alias("gpu_util"),
        (wave / 1440).alias("gr_engine_active"),
        (wave * 50).alias("fb_used_mib"),
        (81920 - wave * 50).alias("fb_free_mib"),
        (100 + wave / 3).alias("power_w"),
        (35 + wave / 40).alias("temp_c"),
        ((base + pl.col("m")) * 60_000 + pl.col("g")).cast(pl.Float64).alias("energy_mj"),
        pl.lit(None, pl.Int32).alias("xid"),
    )


def write_month(wh: Warehouse, start: datetime, days: int, gpus: int) -> int:
    """Store `days` days of `gpus` GPUs from `start` (UTC midnight); the rows stored."""
    stored = 0
    for d in range(days):
        day = (start + timedelta(days=d)).astimezone(UTC)
        stored += wh.ingest("bench:synthetic-month", {"gpu_minutes": day_frame(day, gpus)}).stored["gpu_minutes"]
    return stored


def job_records(start: datetime, days: int, gpus: int) -> pl.DataFrame:
    """One record per job the GPU-minutes' labels name (module docstring): GPUs 4k+1..4k+3 run job FIRST_JOB + k
    from `start` for `days` days, after a wait of k mod 60 minutes; every tenth job fails (exit code 1)."""
    begin = start.astimezone(UTC).replace(tzinfo=None)
    end = begin + timedelta(days=days)
    rows = []
    for k in range(gpus // 4):
        failed = k % 10 == 0
        rows.append({
            "cluster": CLUSTER, "job_id": FIRST_JOB + k, "submit_time": begin - timedelta(minutes=k % 60),
            "name": f"synthetic-{k}", "user": f"user{k % 40}", "account": ACCOUNTS[k % len(ACCOUNTS)],
            "partition": PARTITIONS[k % len(PARTITIONS)], "qos": "normal", "priority": 1000,
            "eligible_time": begin - timedelta(minutes=k % 60), "start_time": begin, "end_time": end,
            "state": "FAILED" if failed else "COMPLETED", "reason": "None", "exit_code": 1 if failed else 0,
            "gpus_requested": 3, "gpus_allocated": 3, "gpu_type": "h100",
            "nodes": f"synthetic-gpu-{4 * k // GPUS_PER_NODE:04d}", "time_limit_min": days * 1440 + 60,
            "comment": None, "array_job_id": None, "array_task_id": None, "exit_signal": None,
        })
    return pl.DataFrame(rows, schema=tables.JOBS, orient="row")


def write_jobs(wh: Warehouse, start: datetime, days: int, gpus: int) -> int:
    """Store `job_records`; the records stored."""
    return wh.ingest("bench:synthetic-month", {"jobs": job_records(start, days, gpus)}).stored["jobs"]
