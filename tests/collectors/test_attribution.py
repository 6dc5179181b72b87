from __future__ import annotations

from datetime import datetime, timedelta

import polars as pl

from gpusteward import tables
from sla.attribution_gpu import attribution_gpu_minutes, unattributed_summary

T0 = datetime(2026, 10, 1, 12)


def minutes(rows: list[tuple[int, int, str | None]]) -> pl.DataFrame:
    frame = pl.DataFrame(
        [
            {
                "cluster": "east",
                "host": "h1",
                "gpu": g,
                "ts": T0 + timedelta(minutes=m),
                "job_id": job,
                "gpu_util": 50.0,
            }
            for g, m, job in rows
        ]
    )
    return tables.conform(frame, tables.GPU_MINUTES)


JOBS = pl.DataFrame(
    {
        "cluster": ["east", "east", "east"],
        "job_id": ["101", "202", "ml/pod-a"],
        "team": ["nlp", "vision", "platform"],
        "scenario": ["training", "interactive", "inference"],
    }
)
ALLOC = pl.DataFrame(
    {
        "cluster": ["east"],
        "host": ["h1"],
        "gpu": [1],
        "job_id": ["202"],
        "start": [T0],
        "end": [T0 + timedelta(minutes=2)],
    }
)


def test_label_then_allocation_then_unattributed() -> None:
    got = attribution_gpu_minutes(
        minutes([(0, 0, "101"), (0, 1, "ml/pod-a"), (1, 0, None), (1, 1, None), (1, 2, None), (2, 0, "999")]),
        JOBS,
        ALLOC,
    )
    assert got.height == 6  # nothing dropped
    rows = got.select("gpu", "job_id", "team", "scenario", "attributed_by").rows()
    assert rows == [
        (0, "101", "nlp", "training", "label"),
        (0, "ml/pod-a", "platform", "inference", "label"),
        (1, "202", "vision", "interactive", "allocation"),
        (1, "202", "vision", "interactive", "allocation"),
        (1, None, "unattributed", "unattributed", "unattributed"),  # the allocation ended
        (2, "999", "unattributed", "unattributed", "unattributed"),  # a label no job list knows
    ]
    summary = dict(unattributed_summary(got).select("attributed_by", "gpu_minutes").rows())
    assert summary == {"allocation": 2, "label": 2, "unattributed": 2}
