"""Overview data for dashboard tests: the hand-made month of tests/reports, no warehouse needed."""

from __future__ import annotations

from datetime import date, datetime, timedelta

from dashboards.data import OverviewData, fallback_texts, pool_gpus, team_names
from gpusteward.config.schema import ClusterConfig
from gpusteward.domain import Month
from tests.reports.fixtures import MONTH, demo_config, demo_outputs, empty_outputs
from warehouse.readmodel import ReadModel

AS_OF = datetime(2026, 12, 1, 0, 59)

STATUS = {
    "tables": {
        "gpu_minutes": {"rows": 2750400, "min_ts": "2026-11-01T00:00:00", "max_ts": "2026-12-01T00:59:00"},
        "jobs": {"rows": 2100, "min_ts": "2026-10-30T22:10:00", "max_ts": "2026-11-30T23:50:00"},
        "alerts": {"rows": 3},
    },
    "completeness": [],
}

FIRING = [
    {
        "fingerprint": "a1b2c3d4e5f60718",  # 16 hex digits, as the alert engine makes them
        "line": "inference_reserve",
        "subject": "east",
        "status": "firing",
        "severity": "critical",
        "starts_at": datetime(2026, 11, 30, 22, 15),
        "ends_at": None,
        "summary": "east holds 9 GPUs for online inference, below its reserve of 12",
    }
]

RESOLVED = {  # recorded twice: when it fired, and when it resolved
    "fingerprint": "0f1e2d3c4b5a6978",
    "line": "training_preemption",
    "subject": "east",
    "status": "resolved",
    "severity": "warning",
    "starts_at": datetime(2026, 11, 12, 9, 0),
    "ends_at": datetime(2026, 11, 12, 17, 30),
    "summary": "training on east was preempted in 14% of its GPU-hours, over its limit of 10%",
}


def sample_overview() -> OverviewData:
    config = demo_config()
    from dataclasses import replace

    config = replace(config, clusters=[ClusterConfig(name="east", gpus=32), ClusterConfig(name="west", gpus=32)])
    return OverviewData(
        month=MONTH,
        outputs=demo_outputs(),
        status=STATUS,
        alerts=FIRING,
        data_age=timedelta(hours=2, minutes=15),
        data_as_of=AS_OF,
        months=(Month(2026, 10), MONTH),
        team_names=team_names(config),
        pool_gpus=pool_gpus(config),
        fallbacks=fallback_texts(config),
    )


def empty_overview() -> OverviewData:
    return OverviewData(month=MONTH, outputs=empty_outputs(), status={}, alerts=[], data_age=None)


SAMPLE_ARRAY = {
    "cluster": "east", "array_job_id": 4101, "name": "sweep-lr", "scenario": "training", "team": "vision",
    "queue": "east/train", "tasks": 200, "records": 212, "started": 207, "completed": 190, "failed": 6,
    "cancelled": 3, "other": 1, "wait_p50_s": 420.0, "wait_max_s": 5400.0, "longest_wait_task": "4101_17",
}


# Daily waits of two queues with a p95 objective and one without (drawn nowhere): warehouse/series.py's shape.
SAMPLE_WAITS = {
    "day": [date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 1)],
    "queue": ["east/train", "east/train", "west/eval", "west/eval", "west/interactive"],
    "zone": ["UTC"] * 5,
    "started": [40, 35, 50, 46, 9],
    "wait_p95_s": [5400.0, 1800.0, 19800.0, 9000.0, 60.0],
    "wait_max_s": [7200.0, 3600.0, 45000.0, 20000.0, 90.0],
}


# The other series (warehouse/series_*.py's shapes): east misses 02:00 (a gap), west reports no utilisation.
SAMPLE_ALLOCATION = {
    "hour": [datetime(2026, 11, 1, h) for h in (0, 1, 3, 0)],
    "zone": ["UTC"] * 4,
    "cluster": ["east", "east", "east", "west"],
    "reporting_gpus": [30.0, 31.0, 32.0, 16.0],
    "allocated_gpus": [24.0, 26.0, 20.0, 8.0],
    "inference_gpus": [6.0, 8.0, 4.0, 0.0],
    "util_minutes": [1440, 1560, 1200, 0],
    "engine_minutes": [1440, 1560, 600, 0],
    "util_mean": [0.55, 0.6, 0.3, None],
}
SAMPLE_INFERENCE = {  # "ghost" has no result this month: not drawn
    "hour": [datetime(2026, 11, 1, 0), datetime(2026, 11, 1, 1), datetime(2026, 11, 1, 0), datetime(2026, 11, 1, 0)],
    "zone": ["UTC"] * 4,
    "service": ["chat-70b", "chat-70b", "embed-small", "ghost"],
    "slots": [12, 11, 12, 12],
    "requests": [45000.0, 36000.0, 7200.0, 10.0],
    "rps": [12.5, 10.0, 2.0, 10 / 3600],
    "p95_s": [4.0, 3.0, 0.3, 1.0],
    "p99_s": [9.5, 7.0, 0.5, 2.0],
}
SAMPLE_IDLE = {  # research's interactive sessions count against its idle_gpu_hours objective (100 a month)
    "day": [date(2026, 11, 1), date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 1), date(2026, 11, 3)],
    "zone": ["UTC"] * 5,
    "scenario": ["training", "evaluation", "training", "interactive", "interactive"],
    "team": ["vision", "nlp", "vision", "research", "research"],
    "gpu_hours": [40.0, 12.0, 36.0, 90.0, 80.0],
    "idle_gpu_hours": [1.0, 0.25, 0.0, 20.0, 10.0],
    "idle_held_gpu_hours": [3.0, 0.5, 2.0, 40.0, 30.0],
}
SAMPLE_PREEMPTIONS = {
    "day": [date(2026, 11, 1), date(2026, 11, 1), date(2026, 11, 2), date(2026, 11, 3)],
    "zone": ["UTC"] * 4,
    "cluster": ["east", "east", "east", "east"],
    "scenario": ["training", "interactive", "training", "training"],
    "team": ["vision", "research", "nlp", "nlp"],
    "ended": [12, 4, 5, 20],
    "preempted": [3, 1, 0, 2],
}
SERIES = {"queue_wait_daily": SAMPLE_WAITS, "allocation_hourly": SAMPLE_ALLOCATION,
          "inference_hourly": SAMPLE_INFERENCE, "idle_daily": SAMPLE_IDLE, "preemptions_daily": SAMPLE_PREEMPTIONS}


def sample_model(*, with_plan: bool = True) -> ReadModel:
    """The hand-made month (and an empty October) as a published read model, with one plan and one alert."""
    import json

    import polars as pl

    from gpusteward import tables
    from warehouse import control, queries
    from warehouse.readmodel import MONTH_TABLES, PLANS, ReadModel

    months = {str(MONTH): demo_outputs(), str(Month(2026, 10)): empty_outputs()}
    frames: dict[str, dict[str, pl.DataFrame]] = {name: {} for name in MONTH_TABLES}
    for key, outputs in months.items():
        parts = {"sla_results": outputs.results.with_columns(pl.lit(key).alias("month")), "idle_by_job": outputs.idle,
                 "breach_episodes": outputs.episodes, "usage": outputs.usage, "completeness": outputs.completeness,
                 "quota_plan_items": outputs.plan_items, "month_arrays": outputs.arrays, "showback": outputs.showback}
        for name, frame in parts.items():
            frames[name][key] = tables.conform(frame, MONTH_TABLES[name])
        frames["alerts"][key] = tables.empty(queries.ALERTS)
    frames["month_arrays"][str(MONTH)] = tables.conform(pl.DataFrame([SAMPLE_ARRAY]), MONTH_TABLES["month_arrays"])
    for name, series in SERIES.items():
        frames[name][str(MONTH)] = tables.conform(pl.DataFrame(series), MONTH_TABLES[name])
    alert = FIRING[0] | {"month": str(MONTH), "body": "{}", "recorded_at": AS_OF}
    fired = RESOLVED | {"month": str(MONTH), "body": "{}", "status": "firing", "ends_at": None,
                        "recorded_at": RESOLVED["starts_at"]}
    resolved = RESOLVED | {"month": str(MONTH), "body": "{}", "recorded_at": RESOLVED["ends_at"]}
    frames["alerts"][str(MONTH)] = tables.conform(pl.DataFrame([alert, fired, resolved]), queries.ALERTS)
    items = demo_outputs().plan_items.to_dicts()
    plans = pl.DataFrame([{
        "plan_id": "2026-11-abc123", "month": str(MONTH), "created_at": AS_OF, "status": "proposed", "dry_run": True,
        "body": json.dumps({"items": items}, default=str), "decision": None, "decided_by": None, "decided_at": None,
    }]) if with_plan else tables.empty(PLANS)
    whole = {
        "quota_plans": tables.conform(plans, PLANS),
        "alert_states": tables.empty(control.ALERT_STATES),
        "control_actions": tables.empty(control.CONTROL_ACTIONS),
    }
    return ReadModel("v-test", AS_OF + timedelta(minutes=5), STATUS, frames, whole)
