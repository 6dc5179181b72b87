"""One job's page (anchors: Princeton jobstats, Open OnDemand's job view): its records, its GPUs over time,
its preemptions and the ledger lines about it. Pure: read-model frames in, frames and charts out.

The timeline is the job's own GPU buckets (the minutes labelled with its id), merged into coarser
steps for a long job so each GPU keeps a few hundred points. A gap in a line is time without
telemetry: the lines break there instead of joining across it or dropping to zero.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo

import altair as alt
import polars as pl

from dashboards.texts import Texts
from warehouse.gpu_buckets import BUCKET_MINUTES, coarsen

POINTS = 750  # at most this many steps per GPU: a 31-day job in hours, a day in 5 minutes
STEPS = ("5m", "15m", "30m", "1h", "3h", "6h", "1d")
STEP_MINUTES = {"5m": 5, "15m": 15, "30m": 30, "1h": 60, "3h": 180, "6h": 360, "1d": 1440}


def step_for(lo: datetime, hi: datetime) -> str:
    """The finest step that draws [lo, hi) in at most POINTS steps."""
    minutes = max((hi - lo).total_seconds() / 60, BUCKET_MINUTES)
    return next((s for s in STEPS if minutes / STEP_MINUTES[s] <= POINTS), STEPS[-1])


def span(records: pl.DataFrame, end_of_data: datetime) -> tuple[datetime, datetime] | None:
    """[first start, last end) of a job's records, a running one up to the end of the data; None if it never ran."""
    started = records.filter(pl.col("start_time").is_not_null())
    if started.is_empty():
        return None
    lo = started["start_time"].min()
    ends = started["end_time"].fill_null(end_of_data)
    hi = ends.max()
    if not isinstance(lo, datetime) or not isinstance(hi, datetime):
        return None
    bucket = timedelta(minutes=BUCKET_MINUTES)
    floor = datetime.min + ((lo - datetime.min) // bucket) * bucket
    return floor, max(hi, floor + bucket)


def timeline(buckets: pl.DataFrame, lo: datetime, hi: datetime, tz: str) -> pl.DataFrame:
    """Per GPU and step: engine activity (%), memory used (GiB), power (W), long (one row per measure),
    with `segment` numbering each run of steps that have data, `time` the step's start on `tz`'s clock (and
    `when`, the same as the tooltip writes it), `alone` for a step with no neighbour (a line cannot draw it)."""
    step = step_for(lo, hi)
    merged = buckets if step == "5m" else coarsen(buckets, step, tz, by_job=True)
    if merged.is_empty():
        return pl.DataFrame(schema={"gpu": pl.Utf8, "time": pl.Utf8, "when": pl.Utf8, "segment": pl.Int64,
                                    "measure": pl.Utf8, "value": pl.Float64, "alone": pl.Boolean})
    gap = timedelta(minutes=STEP_MINUTES[step])
    zone = ZoneInfo(tz)
    frame = (
        merged.sort("host", "gpu", "bucket")
        .with_columns(
            pl.format("{} · {}", "host", "gpu").alias("gpu_label"),
            ((pl.col("bucket").diff().over("host", "gpu") > gap).fill_null(False).cast(pl.Int64)
             .cum_sum().over("host", "gpu")).alias("segment"),
        )
    )
    times = [t.replace(tzinfo=UTC).astimezone(zone).replace(tzinfo=None).isoformat() + "Z"
             for t in frame["bucket"].to_list()]
    frame = frame.with_columns(pl.Series("time", times, dtype=pl.Utf8)).with_columns(
        pl.col("time").str.slice(0, 16).str.replace("T", " ").alias("when"))
    measures = {"engine": pl.col("engine_mean") * 100, "memory": pl.col("memory_mean_mib") / 1024,
                "power": pl.col("power_mean_w")}
    parts = [
        frame.select(pl.col("gpu_label").alias("gpu"), "time", "when", "segment", pl.lit(name).alias("measure"),
                     expr.cast(pl.Float64).alias("value"))
        for name, expr in measures.items()
    ]
    drawn = pl.concat(parts).filter(pl.col("value").is_not_null())
    return drawn.with_columns((pl.len().over("gpu", "measure", "segment") == 1).alias("alone"))


def chart(frame: pl.DataFrame, tx: Texts) -> alt.FacetChart:
    """Three panels (engine activity, memory used, power), a line per GPU; times on the pool's clock. A point
    marks only a step without neighbours: a point on every step doubled what the browser draws (a 6-day job on
    4 GPUs: 6,900 points), and the tooltip's time is written here, not by a time unit the browser works out for
    every point (docs/performance.md)."""
    names = {"engine": tx("job.engine"), "memory": tx("job.memory"), "power": tx("job.power")}
    data = frame.with_columns(pl.col("measure").replace_strict(names, return_dtype=pl.Utf8)).to_pandas()
    base = alt.Chart(data).encode(
        x=alt.X("time:T", title=tx("job.time", zone=tx.zone), scale=alt.Scale(type="utc"),
                axis=alt.Axis(format="%m-%d %H:%M")),
        y=alt.Y("value:Q", title=None),
        color=alt.Color("gpu:N", title=tx("heatmap.gpu")),
        detail="segment:N",
        tooltip=[alt.Tooltip("gpu:N", title=tx("heatmap.gpu")),
                 alt.Tooltip("when:N", title=tx("job.time", zone=tx.zone)),
                 alt.Tooltip("measure:N", title=tx("job.measure")),
                 alt.Tooltip("value:Q", title=tx("job.value"), format=".1f")],
    )
    line = (base.mark_line() + base.transform_filter(alt.datum.alone).mark_point(filled=True, size=12)).properties(
        height=160)
    order = [names["engine"], names["memory"], names["power"]]
    independent = alt.Resolve(scale=alt.ScaleResolveMap(y="independent"))  # %, GiB and W each on its own axis
    faceted: alt.FacetChart = line.facet(row=alt.Row("measure:N", sort=order, title=None))
    faceted.resolve = independent
    return faceted


def job_ledger(ledger: pl.DataFrame, cluster: str, job_id: int) -> pl.DataFrame:
    """Ledger lines about the job: those in which it lost GPUs, and those in which it gained them."""
    return ledger.filter(
        (pl.col("cluster") == cluster) & ((pl.col("job_id") == job_id) | (pl.col("gained_job_id") == job_id))
    ).sort("ts")
