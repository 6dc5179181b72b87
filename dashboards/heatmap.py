"""The GPU heatmap: one row per GPU of a cluster, one column per hour of a day, engine activity as colour.

Anchored on Grafana's DCGM dashboard. Cells are the read model's 5-minute buckets merged into the
pool's hours (means weighted by minutes, warehouse/gpu_buckets.py), so the browser gets one cell per
GPU and hour, never minute rows. An hour without telemetry is "no data": drawn in grey with its own
legend entry, never as zero activity, which the colour scale starts at.
"""

from __future__ import annotations

import json
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

import altair as alt
import polars as pl

from dashboards.texts import Texts
from warehouse.gpu_buckets import coarsen

NO_DATA_FILL = "#c9c9c9"
HOUR = timedelta(hours=1)
ROWS_PER_CHART = 250
"""GPUs drawn at once; a bigger cluster is shown a block at a time. 1,000 GPUs in one chart (24,000 cells, 4 px
a row) took 11-17 s to open in Chromium on the shared machine, most of it Vega drawing the cells
(docs/performance.md)."""


def day_bounds(day: date, tz: str) -> tuple[datetime, datetime]:
    """[start, end) of `day` in `tz`, as naive UTC (23 or 25 hours on a DST change)."""
    zone = ZoneInfo(tz)
    start = datetime(day.year, day.month, day.day, tzinfo=zone).astimezone(UTC).replace(tzinfo=None)
    following = day + timedelta(days=1)
    end = datetime(following.year, following.month, following.day, tzinfo=zone).astimezone(UTC).replace(tzinfo=None)
    return start, end


def local_days(utc_days: list[date], tz: str) -> list[date]:
    """The days of `tz` that the UTC days with buckets touch, oldest first."""
    zone = ZoneInfo(tz)
    out: set[date] = set()
    for d in utc_days:
        for moment in (datetime(d.year, d.month, d.day, tzinfo=UTC), datetime(d.year, d.month, d.day, 23, 59,
                                                                                 tzinfo=UTC)):
            out.add(moment.astimezone(zone).date())
    return sorted(out)


def cells(inventory: pl.DataFrame, buckets: pl.DataFrame, cluster: str, day: date, tz: str) -> pl.DataFrame:
    """One row per GPU (or MIG instance, with its whole-GPU `share`) of `cluster` seen around `day` and hour of
    the day: `engine` (0..1, null: no data),
    `minutes` with engine activity (0..60), memory and power means. GPUs come from the inventory (a GPU
    silent all day is a row of no data) and from the buckets."""
    lo, hi = day_bounds(day, tz)
    hours: list[datetime] = []
    t = lo
    while t < hi:
        hours.append(t)
        t += HOUR
    zone = ZoneInfo(tz)
    labels: list[str] = []
    for h in hours:
        text = h.replace(tzinfo=UTC).astimezone(zone).strftime("%H:%M")
        labels.append(text if text not in labels else text + "′")  # the repeated hour when clocks go back
    share = pl.col("share").cast(pl.Float64) if "share" in inventory.columns else pl.lit(1.0)
    mine = inventory.filter(pl.col("cluster") == cluster)
    known = mine.filter(
        (pl.col("first_seen").fill_null(lo) < hi) & (pl.col("last_seen").fill_null(hi) >= lo)
    ).select("host", "gpu")
    seen = buckets.filter(pl.col("cluster") == cluster).select("host", "gpu")
    shares = mine.select("host", "gpu", share.alias("share")).unique(["host", "gpu"])
    gpus = (
        pl.concat([known, seen.cast(known.schema)]).unique()
        .join(shares.cast({"gpu": known.schema["gpu"]}), on=["host", "gpu"], how="left")
        .with_columns(pl.col("share").fill_null(1.0))
        .sort("host", "gpu")
    )
    grid = gpus.join(pl.DataFrame({"bucket": hours, "hour": labels, "order": list(range(len(hours)))},
                                  schema={"bucket": pl.Datetime("us"), "hour": pl.Utf8, "order": pl.Int64}),
                     how="cross")
    hourly = coarsen(buckets.filter(pl.col("cluster") == cluster), "1h", tz).select(
        "host", "gpu", "bucket", "engine_minutes", "engine_mean", "memory_mean_mib", "power_mean_w")
    out = grid.join(hourly, on=["host", "gpu", "bucket"], how="left").with_columns(
        pl.col("engine_minutes").fill_null(0).alias("minutes"),
        pl.col("engine_mean").alias("engine"),
        (pl.col("memory_mean_mib") / 1024).alias("memory_gib"),
        pl.col("power_mean_w").alias("power_w"),
        pl.format("{} · {}", "host", "gpu").alias("row"),
    )
    return out.select("row", "host", "gpu", "share", "hour", "order", "bucket", "engine", "minutes", "memory_gib",
                      "power_w")


def chart(frame: pl.DataFrame, tx: Texts) -> alt.LayerChart:
    """Rect per cell: viridis for engine activity 0..100%, grey (dashed outline) for no data."""
    rows = frame["row"].n_unique()
    step = 14 if rows <= 80 else 8 if rows <= 250 else 4
    activity = tx("heatmap.activity")
    no_data = tx("heatmap.no_data")
    # Only what is drawn or shown travels to the browser (24,000 cells for 1,000 GPUs). The axes' order is a
    # field of each cell (its GPU's rank, its hour's), never a list of the values: Vega-Lite turns such a list
    # into an `indexof([...], datum.row)` per cell, which Streamlit's CSP-safe expression interpreter
    # evaluated in 7-13 s for 1,000 GPUs (docs/performance.md, "Dashboard: page loads").
    row_order = pl.struct("host", "gpu").rank("dense").cast(pl.Int32).alias("row_order")
    data = frame.select("row", row_order, "hour", "order", (pl.col("engine") * 100).alias("engine_pct"), "minutes",
                        pl.col("memory_gib").round(2), pl.col("power_w").round(1)).to_pandas()
    x = alt.X("hour:O", sort=alt.EncodingSortField("order", op="min"), title=tx("heatmap.hour", zone=tx.zone),
              axis=alt.Axis(labelAngle=0))
    y = alt.Y("row:O", sort=alt.EncodingSortField("row_order", op="min"), title=tx("heatmap.gpu"),
              axis=alt.Axis(labelLimit=220, labelOverlap=True))
    tooltip = [
        alt.Tooltip("row:O", title=tx("heatmap.gpu")),
        alt.Tooltip("hour:O", title=tx("heatmap.hour", zone=tx.zone)),
        alt.Tooltip("engine_pct:Q", title=activity, format=".1f"),
        alt.Tooltip("minutes:Q", title=tx("heatmap.minutes")),
        alt.Tooltip("memory_gib:Q", title=tx("heatmap.memory"), format=".1f"),
        alt.Tooltip("power_w:Q", title=tx("heatmap.power"), format=".0f"),
    ]
    base = alt.Chart(data).encode(x=x, y=y)
    # viridis has no grey in it: a grey cell cannot be read as a level of activity
    measured = base.transform_filter("isValid(datum.engine_pct)").mark_rect().encode(
        color=alt.Color("engine_pct:Q", title=activity, scale=alt.Scale(domain=[0, 100], scheme="viridis")),
        tooltip=tooltip,
    )
    missing = base.transform_filter("!isValid(datum.engine_pct)").transform_calculate(
        state=json.dumps(no_data)).mark_rect(
        stroke="#8a8a8a", strokeDash=[2, 2], strokeWidth=0.6).encode(
        color=alt.Color("state:N", title=None, scale=alt.Scale(domain=[no_data], range=[NO_DATA_FILL]),
                        legend=alt.Legend(orient="right")),
        tooltip=[tooltip[0], tooltip[1], alt.Tooltip("state:N", title=activity)],
    )
    independent = alt.Resolve(scale=alt.ScaleResolveMap(color="independent"))  # two legends: scale and "No data"
    return alt.LayerChart(layer=[measured, missing], height=max(step * rows, 120), resolve=independent)


def _block() -> pl.Expr:
    """Each cell's block of ROWS_PER_CHART GPUs, in host then GPU index order (0 first)."""
    return (pl.struct("host", "gpu").rank("dense").cast(pl.Int64) - 1) // ROWS_PER_CHART


def blocks(frame: pl.DataFrame) -> list[tuple[int, int]]:
    """The (first, last) GPU, counted from 1, of each block the cells' GPUs make."""
    total = frame.select(pl.struct("host", "gpu").n_unique()).item()
    return [(start + 1, min(start + ROWS_PER_CHART, total)) for start in range(0, total, ROWS_PER_CHART)]


def block_of(frame: pl.DataFrame, block: int) -> pl.DataFrame:
    """The cells of the `block`-th block of GPUs (see `blocks`)."""
    return frame.filter(_block() == block)


def amount(tx: Texts, value: float, decimals: int) -> str:
    """A count of GPUs or GPU-hours in whole-GPU equivalents: whole when it is (a fleet of whole GPUs reads
    `48`), else with `decimals` (MIG instances: `45.4`)."""
    whole = round(value)
    return tx.fmt.number(whole) if abs(value - whole) < 1e-6 else tx.fmt.number(value, decimals)


def summary(frame: pl.DataFrame) -> tuple[float | None, float, float, float]:
    """(engine activity over the cells with data, weighted by minutes; GPUs; GPU-hours with data; GPU-hours
    without), GPUs and GPU-hours in whole-GPU equivalents: a row (a cell) counts its GPU's share, so a MIG
    instance's hour is its slices of the card's."""
    measured = frame.filter(pl.col("engine").is_not_null())
    minutes = float(measured["minutes"].sum()) if measured.height else 0.0
    mean = float((measured["engine"] * measured["minutes"]).sum()) / minutes if minutes else None
    gpus = float(frame.unique(["host", "gpu"])["share"].sum()) if frame.height else 0.0
    with_data = float(measured["share"].sum()) if measured.height else 0.0
    total = float(frame["share"].sum()) if frame.height else 0.0
    return mean, gpus, with_data, total - with_data
