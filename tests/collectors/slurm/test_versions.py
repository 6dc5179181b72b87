"""Recorded sacct/slurmrestd outputs of every Slurm release we read: one test per version."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from collectors.sacct import read_sacct
from collectors.slurm import shapes
from gpusteward import tables

DATA = Path(__file__).parents[2] / "data" / "scheduler"
TS = datetime(2026, 11, 1)


def load(rel: str) -> Any:
    return json.loads((DATA / rel).read_text())


def jobs_of(rel: str) -> pl.DataFrame:
    jobs, events, problems = read_sacct(load(rel), source=rel)
    assert problems == []
    assert jobs.schema == tables.JOBS
    assert events.schema == tables.JOB_EVENTS
    return jobs


def test_21_08_dbv0_0_37() -> None:
    jobs = jobs_of("sacct_slurm_21_8_8.json")
    assert jobs["state"].to_list() == ["REQUEUED"]


def test_22_05_dbv0_0_38_sacct_rest_and_quotas() -> None:
    jobs = jobs_of("sacct_slurm_22_5_9.json")
    assert (jobs["state"][0], jobs["gpus_allocated"][0], jobs["exit_code"][0]) == ("FAILED", 16, None)
    rest = jobs_of("slurm/22.05-local/rest-slurmdb-jobs.json")
    assert rest.height == 9
    assert rest["exit_code"].null_count() == 9
    qos = shapes.qos_snapshots(load("slurm/22.05-local/rest-slurmdb-qos.json"), cluster="gpuobs", ts=TS, source="q")
    limits = {r[0]: r[1:] for r in qos.select("name", "gpu_limit", "priority").rows()}
    assert limits["team-quota"] == (6, 10)  # raised through REST in the recording
    assert limits["high"] == (None, 1000)
    assoc = load("slurm/22.05-local/rest-slurmdb-associations.json")
    accounts = shapes.association_snapshots(assoc, cluster="gpuobs", ts=TS, source="a")
    assert set(accounts["name"]) == {"root", "ml-research", "inference"}
    live = load("slurm/22.05-local/squeue.json")
    usage = shapes.quota_usage(live, cluster="gpuobs", ts=TS, source="squeue")
    row = usage.filter((pl.col("kind") == "qos") & (pl.col("name") == "team-quota")).row(0, named=True)
    assert (row["gpus_in_use"], row["jobs_running"], row["jobs_pending"]) == (3, 1, 1)
    gpus = shapes.job_gpus(live, cluster="gpuobs", source="squeue")
    assert gpus.filter(pl.col("job_id") == 7).select("host", "gpu").rows() == [
        ("gpu-01", 2),
        ("gpu-01", 3),
        ("gpu-01", 4),
    ]
    assert gpus.filter(pl.col("job_id") == 6).height == 8


def test_23_02_data_parser_v0_0_39() -> None:
    jobs = jobs_of("sacct_slurm_23_2_6.json")
    assert jobs.height == 1
    assert jobs["priority"].null_count() == 0


def test_23_11_data_parser_v0_0_40() -> None:
    jobs = jobs_of("sacct_slurm_23_11_5.json")
    assert jobs.height == 1
    failed = jobs_of("slurm/23.11-v0.0.40/slurmdb-job-failed.json")
    assert (failed["state"][0], failed["exit_code"][0]) == ("FAILED", 1)
    qos = shapes.qos_snapshots(load("slurm/23.11-v0.0.40/slurm-qos.json"), cluster="hpc", ts=TS, source="q")
    assert "normal" in set(qos["name"])
    parts = shapes.partition_snapshots(
        load("slurm/23.11-v0.0.40/slurm-partitions.json"), cluster="hpc", ts=TS, source="p"
    )
    assert parts.select("name", "gpu_limit", "priority").rows() == [("normal", None, 1)]


def _data_parser_release(version: str) -> None:
    for state in ("completed", "failed", "timeout"):
        jobs = jobs_of(f"slurm/{version}/slurmdb-job-{state}.json")
        assert jobs["state"][0] == state.upper()
    multi = jobs_of(f"slurm/{version}/slurmdb-job-gpus-multi-nodes.json")
    assert multi.height == 1
    data = load(f"slurm/{version}/slurm-qos.json")
    cluster = shapes.cluster_of(data, "x")
    assert cluster == "hpc"
    qos = shapes.qos_snapshots(data, cluster=cluster, ts=TS, source="q")
    assert qos.schema == tables.QUOTA_SNAPSHOTS
    assert qos.height >= 1
    assoc = shapes.association_snapshots(
        load(f"slurm/{version}/slurmdb-associations.json"), cluster="hpc", ts=TS, source="a"
    )
    assert assoc.height >= 1
    assert set(assoc["kind"]) == {"account"}
    parts = shapes.partition_snapshots(load(f"slurm/{version}/slurm-partitions.json"), cluster="hpc", ts=TS, source="p")
    assert parts.height >= 1
    usage = shapes.quota_usage(load(f"slurm/{version}/slurm-jobs.json"), cluster="hpc", ts=TS, source="j")
    assert usage["jobs_running"].sum() > 0


def test_24_05_data_parser_v0_0_41() -> None:
    _data_parser_release("24.05-v0.0.41")
    jobs = jobs_of("slurm/24.05-v0.0.41/slurmdb-job-gpus-multi-nodes.json")
    assert jobs["nodes"][0] is not None


def test_25_11_data_parser_v0_0_44() -> None:
    _data_parser_release("25.11-v0.0.44")
    jobs = jobs_of("slurm/25.11-v0.0.44/slurmdb-job-gpus-multi-nodes.json")
    assert jobs["nodes"][0] == "gpu[1-2]"
