"""Small hand-built frames for evaluator tests: every column a test does not name is null."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from gpusteward.config import load_config, load_config_text
from gpusteward.config.schema import Config
from gpusteward.domain import Month
from gpusteward.tables import GPU_MINUTES, INFERENCE_WINDOWS, JOB_EVENTS, JOBS, QUOTA_SNAPSHOTS
from sla.inputs import GPU_INVENTORY, EvaluationInputs

MONTH = Month(2026, 3)
T0 = datetime(2026, 3, 1)
DEMO_CONFIG = Path(__file__).resolve().parents[2] / "examples" / "gpusteward.toml"

BASE_TOML = """
[[clusters]]
name = "east"
gpus = 16
timezone = "TZ"

[teams.nlp]
entitled_share = 0.5
accounts = ["nlp"]
min_gpus = 2

[teams.vision]
entitled_share = 0.3
accounts = ["vision"]
min_gpus = 1

[[rules]]
scenario = "online_inference"
match = { partition = "infer" }

[[rules]]
scenario = "interactive"
match = { partition = "interactive" }

[[rules]]
scenario = "training"
match = { partition = "train" }
"""


def config(extra: str = "", *, timezone: str = "UTC") -> Config:
    return load_config_text(BASE_TOML.replace("TZ", timezone) + extra, source="<test>")


def demo_config() -> Config:
    return load_config(DEMO_CONFIG)


def at(minutes: float) -> datetime:
    """T0 plus `minutes`."""
    return T0 + timedelta(minutes=minutes)


def frame(rows: list[dict[str, Any]], schema: pl.Schema) -> pl.DataFrame:
    full = [{name: row.get(name) for name in schema} for row in rows]
    return pl.DataFrame(full, schema=schema, orient="row")


def job(job_id: int, *, partition: str = "train", account: str = "nlp", cluster: str = "east",
        submit: float = 0, eligible: float | None = None, start: float | None = 0, end: float | None = 60,
        state: str = "COMPLETED", gpus: int = 1, **extra: Any) -> dict[str, Any]:
    """One job record; times are minutes after T0."""
    return {
        "cluster": cluster, "job_id": job_id, "submit_time": at(submit),
        "eligible_time": at(submit if eligible is None else eligible),
        "start_time": None if start is None else at(start), "end_time": None if end is None else at(end),
        "partition": partition, "account": account, "state": state, "gpus_allocated": gpus,
        "gpus_requested": gpus, "name": f"job{job_id}", "user": "u", **extra,
    }


def inputs(
    *,
    jobs: list[dict[str, Any]] | None = None,
    gpu_minutes: pl.DataFrame | list[dict[str, Any]] | None = None,
    windows: list[dict[str, Any]] | None = None,
    quotas: list[dict[str, Any]] | None = None,
    gpus: list[dict[str, Any]] | None = None,
    data_end: datetime | None = None,
    month: Month = MONTH,
) -> EvaluationInputs:
    gm = gpu_minutes if isinstance(gpu_minutes, pl.DataFrame) else frame(gpu_minutes or [], GPU_MINUTES)
    return EvaluationInputs(
        month=month,
        jobs=frame(jobs or [], JOBS),
        job_events=frame([], JOB_EVENTS),
        gpu_minutes=gm,
        inference_windows=frame(windows or [], INFERENCE_WINDOWS),
        quota_snapshots=frame(quotas or [], QUOTA_SNAPSHOTS),
        gpus=frame(gpus or [], GPU_INVENTORY),
        data_end=data_end,
    )


def window(service: str, end: float, counts: list[float], *, requests: float | None = None, errors: float = 0.0,
           le: list[float] | None = None, instance: str = "a", cluster: str = "east",
           ttft: list[float] | None = None) -> dict[str, Any]:
    """One 5-minute inference window ending `end` minutes after T0; `counts` are cumulative per bound."""
    bounds = le or [1.0, 2.0, 4.0, 8.0, 16.0, float("inf")]
    return {
        "cluster": cluster, "service": service, "instance": instance, "ts": at(end), "window_s": 300,
        "requests": counts[-1] if requests is None else requests, "errors": errors,
        "e2e_le": bounds, "e2e_counts": counts, "ttft_le": bounds, "ttft_counts": ttft or counts,
    }


def minutes(job_id: str | None, utils: Sequence[float | None], *, start: float = 0, host: str = "h1", gpu: int = 0,
            fb: float = 0.0, cluster: str = "east", engine: bool = False) -> list[dict[str, Any]]:
    """Consecutive GPU-minutes of one GPU; a None utilisation is a minute with no row at all."""
    rows = []
    for i, u in enumerate(utils):
        if u is None:
            continue
        rows.append({
            "cluster": cluster, "host": host, "gpu": gpu, "ts": at(start + i), "job_id": job_id,
            "gpu_util": None if engine else u, "gr_engine_active": u / 100.0 if engine else None,
            "fb_used_mib": fb,
        })
    return rows
