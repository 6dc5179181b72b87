"""The sample read model of tests/dashboards with what the drill-down reads: job records, a ledger line, the
GPU inventory and a day of GPU buckets (hand-made, so each figure a page shows is known here)."""

from __future__ import annotations

from dataclasses import replace
from datetime import date, datetime, timedelta
from typing import Any

import polars as pl

from gpusteward import tables
from gpusteward.config.schema import ClusterConfig, Config, RuleConfig, RuleMatch
from gpusteward.domain import Scenario
from sla.results import LEDGER
from tests.dashboards.sample import sample_model
from tests.reports.fixtures import MONTH, demo_config
from warehouse.gpu_buckets import GPU_BUCKETS, GPU_INVENTORY
from warehouse.gpu_series import MemorySeries
from warehouse.readmodel import MONTH_TABLES, ReadModel

DAY = date(2026, 11, 10)
T = datetime(2026, 11, 10)


def _job(cluster: str, job_id: int, where: tuple[str, str], span: tuple[datetime | None, datetime | None], *,
         state: str, gpus: int, **extra: Any) -> dict[str, Any]:
    """A JOBS record: `where` is (account, partition), `span` (start, end); submitted an hour before it
    started, eligible ten minutes after that."""
    (account, partition), (start, end) = where, span
    submit = (start or T) - timedelta(hours=1)
    return {"cluster": cluster, "job_id": job_id, "submit_time": submit,
            "eligible_time": submit + timedelta(minutes=10),
            "start_time": start, "end_time": end, "state": state, "account": account, "partition": partition,
            "gpus_allocated": gpus, "name": f"job-{job_id}", "user": f"u{job_id % 7}", "nodes": f"{cluster}-n1"} | extra


H = timedelta(hours=1)
JOBS = [
    # research's interactive sessions, the ones the review says left GPUs idle (tests/reports/fixtures _IDLE)
    _job("west", 31001, ("research", "interactive"), (T, T + 40 * H), state="COMPLETED", gpus=4, exit_code=0),
    _job("west", 31002, ("research", "interactive"), (T, T + 30 * H), state="CANCELLED by 1001", gpus=4,
         exit_code=0),
    _job("east", 31003, ("research", "interactive"), (T + 2 * H, T + 52 * H), state="COMPLETED", gpus=1,
         exit_code=0),
    # vision's training: preempted once (the ledger line), requeued, then failed on a signal
    _job("east", 20011, ("vision", "train"), (T + 10 * H, T + 12 * H), state="PREEMPTED", gpus=2),
    _job("east", 20011, ("vision", "train"), (T + 14 * H, T + 20 * H), state="FAILED", gpus=2,
         submit_time=T + 12 * H, eligible_time=T + 12 * H, exit_signal=9),
    _job("west", 20010, ("nlp", "train"), (T - timedelta(days=2), None), state="RUNNING", gpus=8),
]
LEDGER_LINE = {"ts": T + timedelta(hours=12), "action": "preemption", "cluster": "east", "job_id": 20011,
               "team": "vision", "scenario": "training", "gpus": 2, "gpu_hours_held": 4.0, "gpu_hours_lost": 1.5,
               "gained_job_id": 31003, "gained_team": "research", "reason": "preempted by higher priority"}
INVENTORY = [("east", "e1", g) for g in range(2)] + [("west", "w1", g) for g in range(2)]


def _buckets() -> pl.DataFrame:
    """Job 20011's two GPUs on 10 November, 10:00-12:00 UTC: GPU 0 at 80% engine activity, GPU 1 at 0%
    (exactly zero: data), and GPU 1 silent 11:00-12:00 (no rows: no data)."""
    rows = []
    for minute in range(0, 120, 5):
        start = T + timedelta(hours=10, minutes=minute)
        rows.append(("east", "e1", 0, start, "20011", 5, 5, 0.8, 5, 40960.0, 5, 600.0))
        if minute < 60:
            rows.append(("east", "e1", 1, start, "20011", 5, 5, 0.0, 5, 1024.0, 5, 90.0))
    return pl.DataFrame(rows, schema=GPU_BUCKETS, orient="row")


def drill_config() -> Config:
    rules = [RuleConfig(scenario=Scenario.INTERACTIVE, match=RuleMatch(partition="interactive")),
             RuleConfig(scenario=Scenario.TRAINING, match=RuleMatch(partition="train"))]
    return replace(demo_config(), rules=rules,
                   clusters=[ClusterConfig(name="east", gpus=32), ClusterConfig(name="west", gpus=32)])


def drill_model() -> ReadModel:
    base = sample_model()
    frames = {name: dict(by_month) for name, by_month in base.month_frames.items()}
    frames["job_records"] = {str(MONTH): tables.conform(pl.from_dicts(JOBS, infer_schema_length=None), tables.JOBS)}
    frames["ledger"] = {str(MONTH): tables.conform(pl.DataFrame([LEDGER_LINE], schema=LEDGER), MONTH_TABLES["ledger"])}
    inventory = pl.DataFrame(
        [(c, h, g, "H100", datetime(2026, 11, 1), datetime(2026, 12, 1), 1.0) for c, h, g in INVENTORY],
        schema=GPU_INVENTORY, orient="row")
    whole = dict(base.whole) | {"gpu_inventory": inventory}
    return replace(base, month_frames=frames, whole=whole, series=MemorySeries({DAY: _buckets()}, {DAY: "sample"}))
