"""Idle detection: golden cases, the no-data property, and speed at demo scale."""

from __future__ import annotations

from datetime import UTC
from typing import Any

import numpy as np
import polars as pl
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusteward.tables import GPU_MINUTES, conform
from sla.idle import idle_by_job, idle_by_submission, task_set
from sla.idle_states import minute_states
from tests.sla.builders import MONTH, T0, at, config, frame, inputs, job, minutes

IDLE = """
[idle]
util_below = 5.0
min_minutes = 3
held_memory_mib = 1024
"""


def _one(out: pl.DataFrame, job_id: str = "1") -> dict[str, Any]:
    rows = out.filter(pl.col("job_id") == job_id)
    assert rows.height == 1, out
    return rows.row(0, named=True)


def test_runs_categories_and_no_data() -> None:
    # Job 1 holds 1 GPU for 20 minutes. Telemetry: 4 busy, 3 idle (a run of 3: it counts), 2 missing,
    # 2 idle (a run of 2 is too short: busy), 9 busy.
    utils: list[float | None] = [50, 50, 50, 50, 1, 1, 1, None, None, 1, 1, 80, 80, 80, 80, 80, 80, 80, 80, 80]
    gm = minutes("1", utils, fb=100.0)
    out = idle_by_job(inputs(jobs=[job(1, start=0, end=20)], gpu_minutes=gm), config(IDLE))
    row = _one(out)
    assert row == {
        "cluster": "east", "job_id": "1", "team": "nlp", "scenario": "training", "gpu_minutes": 18,
        "busy_minutes": 15, "idle_minutes": 3, "idle_held_minutes": 0, "no_data_minutes": 2,
        "util_source": "gpu_util", "zero_activity_minutes": 0, "array_job_id": None, "array_task_id": None,
    }


def test_array_tasks_are_one_submission_named_as_slurm_names_them() -> None:
    """Tasks 1, 2, 3 and 7 of array 40 (raw ids 41-43 and 47) idle on four GPUs: one row `40_[1-3,7]`,
    a lone task `50_2`, any other job its id (issue 19: raw ids mean nothing to a task's owner)."""
    tasks = {41: 1, 42: 2, 43: 3, 47: 7}
    jobs = [job(i, start=0, end=5, array_job_id=40, array_task_id=t) for i, t in tasks.items()]
    jobs += [job(52, start=0, end=5, array_job_id=50, array_task_id=2), job(60, start=0, end=5)]
    gm = [m for n, i in enumerate([*tasks, 52, 60]) for m in minutes(str(i), [0.0] * 5, gpu=n, engine=True)]
    idle = idle_by_job(inputs(jobs=jobs, gpu_minutes=gm), config(IDLE))
    assert dict(zip(idle["job_id"], idle["array_task_id"], strict=True))["47"] == 7
    grouped = idle_by_submission(idle).sort("job")
    assert grouped.select("job", "tasks", "idle_minutes", "wasted").rows() == [
        ("40_[1-3,7]", 4, 20, 20), ("50_2", 1, 5, 5), ("60", 1, 5, 5),
    ]
    assert task_set(9, list(range(0, 40, 2))) == "9_[…]"  # past TASKS_SHOWN ranges, as the queues section writes it


def test_zero_activity_counts_short_pauses_that_idle_does_not() -> None:
    # Two 0% minutes inside busy work (too short to be idle), a 1% run of 3 (idle, not zero), and a 0% run of 4.
    utils: list[float | None] = [50, 0, 0, 50, 1, 1, 1, 50, 0, 0, 0, 0, 50]
    gm = minutes("1", utils, fb=100.0, engine=True)
    row = _one(idle_by_job(inputs(jobs=[job(1, start=0, end=13)], gpu_minutes=gm), config(IDLE)))
    assert row["idle_minutes"] == 3 + 4
    assert row["zero_activity_minutes"] == 2 + 4


def test_idle_held_when_memory_stays_allocated() -> None:
    gm = minutes("1", [0.0] * 5, fb=4096.0, engine=True)
    row = _one(idle_by_job(inputs(jobs=[job(1, start=0, end=5)], gpu_minutes=gm), config(IDLE)))
    assert (row["idle_minutes"], row["idle_held_minutes"], row["busy_minutes"]) == (0, 5, 0)
    assert row["util_source"] == "gr_engine_active"


def test_engine_active_wins_over_gpu_util() -> None:
    # GPU_UTIL says 100% (a tiny kernel), GR_ENGINE_ACTIVE says 1%: the truer signal decides.
    rows = [{**r, "gpu_util": 100.0} for r in minutes("1", [1.0] * 4, engine=True)]
    states = minute_states(frame(rows, GPU_MINUTES), config(IDLE).idle)
    assert states["state"].to_list() == ["idle"] * 4


def test_a_gap_breaks_an_idle_run() -> None:
    gm = minutes("1", [1.0, 1.0, None, 1.0, 1.0])
    row = _one(idle_by_job(inputs(jobs=[job(1, start=0, end=5)], gpu_minutes=gm), config(IDLE)))
    assert (row["busy_minutes"], row["idle_minutes"], row["no_data_minutes"]) == (4, 0, 1)


def test_multi_gpu_job_without_any_telemetry_is_all_no_data() -> None:
    out = idle_by_job(inputs(jobs=[job(1, start=0, end=30, gpus=4)]), config(IDLE))
    row = _one(out)
    assert (row["gpu_minutes"], row["no_data_minutes"], row["util_source"]) == (0, 120, None)


def test_telemetry_of_unknown_job_is_unattributed() -> None:
    out = idle_by_job(inputs(gpu_minutes=minutes("77", [50.0] * 3)), config(IDLE))
    row = _one(out, "77")
    assert (row["team"], row["scenario"], row["gpu_minutes"], row["no_data_minutes"]) == (
        "unattributed", "unattributed", 3, 0)


def test_running_job_counts_until_data_end_only() -> None:
    out = idle_by_job(inputs(jobs=[job(1, start=0, end=None, state="RUNNING")], data_end=at(10)), config(IDLE))
    assert _one(out)["no_data_minutes"] == 10  # minutes 0..9 inclusive


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.one_of(st.none(), st.floats(0, 100)), min_size=1, max_size=60),
    st.lists(st.booleans(), min_size=60, max_size=60),
)
def test_a_no_data_minute_is_never_idle_or_busy(utils: list[float | None], drop: list[bool]) -> None:
    cfg = config(IDLE)
    jobs = [job(1, start=0, end=len(utils))]
    full = idle_by_job(inputs(jobs=jobs, gpu_minutes=minutes("1", utils)), cfg)
    thinned = [None if d else u for u, d in zip(utils, drop, strict=False)]
    out = _one(idle_by_job(inputs(jobs=jobs, gpu_minutes=minutes("1", thinned)), cfg))
    present = sum(u is not None for u in thinned)
    assert out["busy_minutes"] + out["idle_minutes"] + out["idle_held_minutes"] == present
    assert out["gpu_minutes"] == present
    assert out["no_data_minutes"] == len(utils) - present
    # Removing data can only turn minutes into "no data", never add idle ones.
    before = _one(full)
    assert out["idle_minutes"] + out["idle_held_minutes"] <= before["idle_minutes"] + before["idle_held_minutes"]
    states = minute_states(frame(minutes("1", thinned), GPU_MINUTES), cfg.idle)
    assert states.height == present


def test_demo_scale_month_accounts_for_every_gpu_minute() -> None:
    # 64 GPUs x a 31-day month = 2.86M GPU-minutes, each GPU running back-to-back 10-hour jobs.
    rng = np.random.default_rng(7)
    n = MONTH.minutes
    gpus = 64
    minute = np.tile(np.arange(n), gpus)
    gid = np.repeat(np.arange(gpus), n)
    t0_us = int(T0.replace(tzinfo=UTC).timestamp() * 1_000_000)
    util = np.where((minute // 120) % 3 == 0, 1.0, np.where(rng.random(minute.size) < 0.3, 0.0, 60.0))
    gm = conform(pl.DataFrame({
        "cluster": np.where(gid < 32, "east", "west"), "host": (gid // 8).astype(str), "gpu": gid % 8,
        "ts": pl.Series(minute * 60_000_000 + t0_us).cast(pl.Datetime("us")),
        "job_id": (gid * 1000 + minute // 600).astype(str), "gpu_util": util, "fb_used_mib": 2000.0,
    }), GPU_MINUTES)
    jobs = [job(g * 1000 + k, cluster="east" if g < 32 else "west", start=k * 600, end=min(k * 600 + 600, n))
            for g in range(gpus) for k in range(n // 600 + 1)]
    data = inputs(jobs=jobs, gpu_minutes=gm)
    cfg = config()
    out = idle_by_job(data, cfg)
    assert int(out["gpu_minutes"].sum()) == gm.height
    assert int(out["no_data_minutes"].sum()) == 0


