"""Overview data for dashboard tests: the hand-made month of tests/reports, no warehouse needed."""

from __future__ import annotations

from datetime import datetime, timedelta

from dashboards.data import OverviewData, pool_gpus, team_names
from gpusteward.config.schema import ClusterConfig
from gpusteward.domain import Month
from tests.reports.fixtures import MONTH, demo_config, demo_outputs, empty_outputs

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
        "fingerprint": "a1b2c3",
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
    )


def empty_overview() -> OverviewData:
    return OverviewData(month=MONTH, outputs=empty_outputs(), status={}, alerts=[], data_age=None)
