"""A small pool for the reclaim tests: three policies (notebooks idle while others wait, training
idle, inference without traffic), an inference reserve line, and builders for the frames around `now`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from gpusteward.config.schema import Config
from gpusteward.tables import GPU_MINUTES, INFERENCE_WINDOWS, JOBS
from sla.reclaim_inputs import RECENT_ACTIONS, WAITING_JOBS, WARNED, ReclaimInputs
from tests.sla.builders import at, config, frame, job, minutes

NOW = at(240)  # four hours after T0
START = at(0)  # the minutes read begin here: a stretch idle since T0 is clipped there

POLICIES = """
[[reclaim.policies]]
name = "notebooks"
scenario = "interactive"
when = "idle_while_waiting"
idle_for = "2h"
grace = "1h"
action = "cancel"
exempt = { accounts = ["vip*"], qos = ["keep"], job_names = ["*-pinned"], users = ["root"] }

[[reclaim.policies]]
name = "training"
scenario = "training"
when = "idle"
idle_for = "1h"
grace = "0s"
action = "requeue"

[[reclaim.policies]]
name = "inference"
scenario = "online_inference"
when = "no_traffic"
idle_for = "1h"
grace = "30m"
action = "scale"

[[inference.service_jobs]]
service = "chat"
partition = "infer"

[[protection.inference_reserve]]
cluster = "east"
min_gpus = 2
"""


def reclaim_config(extra: str = "") -> Config:
    return config(POLICIES + extra)


def notebook(job_id: int, **extra: Any) -> dict[str, Any]:
    """A running one-GPU interactive session started at T0."""
    return job(job_id, **{"partition": "interactive", **extra}, start=0, end=None, state="RUNNING")


def trainer(job_id: int, **extra: Any) -> dict[str, Any]:
    """A running training job started at T0."""
    return job(job_id, **{"partition": "train", **extra}, start=0, end=None, state="RUNNING")


def replica(job_id: int, start: float) -> dict[str, Any]:
    return job(job_id, partition="infer", start=start, end=None, state="RUNNING", name=f"chat-{job_id}")


def gpu_minutes_of(job_id: int, utils: Sequence[float | None], *, host: str = "h1", gpu: int = 0,
                   start: float = 0) -> list[dict[str, Any]]:
    """Minutes of one GPU from `start` (minutes after T0) up to NOW; None leaves a minute without a row."""
    return minutes(str(job_id), utils, start=start, host=host, gpu=gpu, fb=2048.0)


def quiet_windows(service: str = "chat", *, requests: float = 0.0, until: float = 240,
                  since: float = 0) -> list[dict[str, Any]]:
    """5-minute inference windows of `service` ending every five minutes in (since, until]."""
    end = since + 5
    rows = []
    while end <= until:
        rows.append({"cluster": "east", "service": service, "instance": "a", "ts": at(end), "window_s": 300,
                     "requests": requests, "errors": 0.0})
        end += 5
    return rows


def waiting(*job_gpus: int) -> pl.DataFrame:
    return pl.DataFrame([{"cluster": "east", "job_id": 900 + i, "gpus_requested": g} for i, g in enumerate(job_gpus)],
                        schema=WAITING_JOBS)


def reclaim_inputs(
    *, running: list[dict[str, Any]], gpu_minutes: list[dict[str, Any]] | None = None,
    waiting_jobs: pl.DataFrame | None = None, windows: list[dict[str, Any]] | None = None,
    warned: list[dict[str, Any]] | None = None, recent: list[datetime] | None = None,
    running_frame: pl.DataFrame | None = None, now: datetime = NOW,
) -> ReclaimInputs:
    return ReclaimInputs(
        now=now,
        window_start=START,
        running=running_frame if running_frame is not None else frame(running, JOBS),
        waiting=waiting_jobs if waiting_jobs is not None else waiting(),
        gpu_minutes=frame(gpu_minutes or [], GPU_MINUTES),
        inference_windows=frame(windows or [], INFERENCE_WINDOWS),
        warned=pl.DataFrame(warned or [], schema=WARNED),
        recent_actions=pl.DataFrame([{"cluster": "east", "at": t} for t in recent or []], schema=RECENT_ACTIONS),
    )


IDLE = 0.0
BUSY = 60.0
ALL_IDLE = [IDLE] * 240
MINUTES_BEFORE_NOW = timedelta(minutes=240)
