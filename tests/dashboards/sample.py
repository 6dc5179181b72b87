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
                 "quota_plan_items": outputs.plan_items, "month_arrays": outputs.arrays}
        for name, frame in parts.items():
            frames[name][key] = tables.conform(frame, MONTH_TABLES[name])
        frames["alerts"][key] = tables.empty(queries.ALERTS)
    frames["month_arrays"][str(MONTH)] = tables.conform(pl.DataFrame([SAMPLE_ARRAY]), MONTH_TABLES["month_arrays"])
    waits = pl.DataFrame(SAMPLE_WAITS)
    frames["queue_wait_daily"][str(MONTH)] = tables.conform(waits, MONTH_TABLES["queue_wait_daily"])
    alert = FIRING[0] | {"month": str(MONTH), "body": "{}", "recorded_at": AS_OF}
    frames["alerts"][str(MONTH)] = tables.conform(pl.DataFrame([alert]), queries.ALERTS)
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
