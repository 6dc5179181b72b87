"""Queries that only benchmarks run: a bare scan to compare the evaluation against."""

from __future__ import annotations

from gpusteward.domain import Month
from warehouse.sql import run
from warehouse.store import Warehouse


def scan_gpu_minutes(wh: Warehouse, month: Month) -> int:
    """Read every GPU-minute of the month once (count and sum the utilisation columns); the row count.

    The floor any evaluation of the month has to pay: it touches the same rows once, with no logic.
    """
    start, end = month.start.replace(tzinfo=None), month.end.replace(tzinfo=None)
    rows = run(
        wh.connection,
        "SELECT count(*), sum(gpu_util), sum(gr_engine_active), sum(fb_used_mib) FROM gpu_minutes"
        " WHERE ts >= ? AND ts < ?",
        [start, end],
    )
    return int(rows[0][0])
