"""Per-window latency quantiles computed inside DuckDB from the stored bucket lists.

Prometheus' `histogram_quantile` semantics (see sla/histogram.py for the pure reference the
evaluators use): rank = q * observations; the first finite bucket whose cumulative count reaches
the rank holds the quantile, interpolated linearly from the previous bound (0 for the first
bucket); a rank only +Inf reaches gives the highest finite bound; no observations give NULL.
Keeping the bucket counts as one list per window is what makes this a single pass over the table
(see ../shared notes: a row per bucket needs a window function and is about 7x slower).
"""

from __future__ import annotations

from collections.abc import Sequence

import polars as pl

from gpusteward.domain import Month
from warehouse.store import Warehouse


def _position_sql(q: float) -> str:
    """1-based index of the first finite bucket reaching rank q * total, NULL when only +Inf does."""
    return f"list_position(list_transform(c[1:n - 1], lambda x: x >= {q} * total), true)"


def _value_sql(pos: str, q: float) -> str:
    lower = f"CASE WHEN {pos} = 1 THEN least(le[1], 0.0) ELSE le[{pos} - 1] END"
    below = f"CASE WHEN {pos} = 1 THEN 0.0 ELSE c[{pos} - 1] END"
    inside = f"({lower} + (le[{pos}] - {lower}) * ({q} * total - {below}) / nullif(c[{pos}] - {below}, 0))"
    return (
        f"CASE WHEN total IS NULL OR total <= 0 THEN NULL WHEN {pos} IS NULL THEN le[n - 1] "
        f"ELSE coalesce({inside}, le[{pos}]) END"
    )


def window_quantiles(
    wh: Warehouse, month: Month, qs: Sequence[float] = (0.5, 0.95, 0.99), *, histogram: str = "e2e"
) -> pl.DataFrame:
    """One row per stored window of the month: cluster, service, instance, ts and `p50`, `p95`, ..."""
    if histogram not in ("e2e", "ttft"):
        raise ValueError(f"unknown histogram {histogram!r}")
    names = [f"p{round(q * 100):d}" for q in qs]
    # Each quantile's bucket position is found once, then reused for bounds and counts.
    positions = ", ".join(f"{_position_sql(q)} AS pos_{name}" for q, name in zip(qs, names, strict=True))
    values = ", ".join(f"{_value_sql(f'pos_{name}', q)} AS {name}" for q, name in zip(qs, names, strict=True))
    lo, hi = month.start.replace(tzinfo=None), month.end.replace(tzinfo=None)
    sql = f"""
        WITH w AS (
            SELECT cluster, service, instance, ts, {histogram}_le AS le, {histogram}_counts AS c,
                   len({histogram}_counts) AS n, {histogram}_counts[len({histogram}_counts)] AS total
            FROM inference_windows WHERE ts > ? AND ts <= ?
        ),
        p AS (SELECT *, {positions} FROM w)
        SELECT cluster, service, instance, ts, {values} FROM p ORDER BY cluster, service, instance, ts
    """  # noqa: S608 - built from our own column names and numbers
    return wh.query(sql, [lo, hi])


def bucket_scan(wh: Warehouse, month: Month) -> float:
    """The bare scan the quantiles are measured against: every bucket count of the month read once."""
    lo, hi = month.start.replace(tzinfo=None), month.end.replace(tzinfo=None)
    frame = wh.query("SELECT sum(list_sum(e2e_counts)) AS s FROM inference_windows WHERE ts > ? AND ts <= ?", [lo, hi])
    value = frame.item() if frame.height else None
    return float(value) if value is not None else 0.0
