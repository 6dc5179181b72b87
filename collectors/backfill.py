"""GPU-minutes from a Prometheus-compatible store: per-minute rollups pushed down to the server.

For each DCGM field the server evaluates `sum_over_time`, `count_over_time`, `max_over_time` or
`last_over_time` over a window that holds exactly one minute's samples, at one point per minute
(`step=60s`), so the answer is already rolled up: one value per series and minute. Evaluation is
at the minute's last millisecond (`m + 59.999 s`) and the window covers `[m, m + 59999 ms]`:
written `[59999ms]` where windows are closed (Prometheus 2.x) and `[1m]` where they are left-open
(VictoriaMetrics, Prometheus 3.x). No lookback, staleness or extrapolation is involved, so both
return the stored samples' rollups exactly, and a minute without samples has no point (no row).

Ranges are split into chunks of at most `chunk_minutes` points per series (Prometheus allows
11,000); `backfill` yields one batch per chunk with the watermark to store after ingesting it, and
resumes after a stored watermark.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime

import polars as pl

from collectors.batch import CollectedBatch, Problem
from collectors.dcgm import BLANK_CEILING, BLANK_THRESHOLD, identify, refuse_implausible
from collectors.promapi import CLOSED, PromClient
from collectors.samples import Series
from gpusteward import tables

MINUTE_MS = 60_000
CHUNK_MINUTES = 10_000  # under Prometheus' 11,000 points per series
# GPU_MINUTES column -> (DCGM field, how the minute is rolled up); see collectors.dcgm.ROLLUPS.
FIELDS: dict[str, tuple[str, str]] = {
    "gpu_util": ("DCGM_FI_DEV_GPU_UTIL", "mean"),
    "gr_engine_active": ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "mean"),
    "fb_used_mib": ("DCGM_FI_DEV_FB_USED", "max"),
    "fb_free_mib": ("DCGM_FI_DEV_FB_FREE", "last"),
    "power_w": ("DCGM_FI_DEV_POWER_USAGE", "mean"),
    "temp_c": ("DCGM_FI_DEV_GPU_TEMP", "max"),
    "energy_mj": ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "last"),
    "xid": ("DCGM_FI_DEV_XID_ERRORS", "last"),
}
_FUNCTIONS = {"mean": ("sum_over_time", "count_over_time"), "max": ("max_over_time",), "last": ("last_over_time",)}


@dataclass(frozen=True)
class Chunk:
    """One chunk of a backfill: its batch, and the watermark to store once the batch is stored."""

    batch: CollectedBatch
    start: datetime
    end: datetime  # exclusive; the watermark
    index: int
    total: int


def to_ms(moment: datetime) -> int:
    aware = moment if moment.tzinfo else moment.replace(tzinfo=UTC)
    return int(aware.timestamp() * 1000)


def to_datetime(ms: int) -> datetime:
    return datetime.fromtimestamp(ms / 1000, UTC).replace(tzinfo=None)


def chunks(start_ms: int, end_ms: int, chunk_minutes: int = CHUNK_MINUTES) -> list[tuple[int, int]]:
    """Whole minutes [start, end) in pieces of at most `chunk_minutes` minutes."""
    lo = start_ms // MINUTE_MS * MINUTE_MS
    hi = -(-end_ms // MINUTE_MS) * MINUTE_MS
    return [(a, min(hi, a + chunk_minutes * MINUTE_MS)) for a in range(lo, hi, chunk_minutes * MINUTE_MS)]


def queries(window: str, selector: str = "") -> list[tuple[str, str, str]]:
    """(column, function, PromQL) for every query of one chunk."""
    matchers = f"{{{selector}}}" if selector else ""
    return [
        (column, fn, f"{fn}({name}{matchers}[{window}])")
        for column, (name, how) in FIELDS.items()
        for fn in _FUNCTIONS[how]
    ]


def gpu_minutes_between(
    client: PromClient,
    start_ms: int,
    end_ms: int,
    *,
    convention: str,
    selector: str = "",
    default_cluster: str = "default",
) -> CollectedBatch:
    """The GPU-minutes of whole minutes in [start_ms, end_ms) (at most 11,000 of them)."""
    window = "59999ms" if convention == CLOSED else "1m"
    batch = CollectedBatch(f"promapi:{client.url}")
    first, last = start_ms + MINUTE_MS - 1, end_ms - 1  # each minute's last millisecond
    keys = ("cluster", "host", "gpu", "uuid", "model_name", "job_id", "mig_profile")
    rows: dict[str, list[object]] = {k: [] for k in keys}
    rows |= {"ts_ms": [], "column": [], "fn": [], "value": []}
    skipped = 0
    reasons: set[str] = set()
    for column, fn, query in queries(window, selector):
        name = FIELDS[column][0]
        for series in client.query_range(query, first, last, 60):
            who = identify(Series(name, series.labels, name, "gauge"), default_cluster)
            if isinstance(who, str):
                skipped += len(series.values)
                reasons.add(who)
                continue
            n = len(series.values)
            for key, val in (
                ("cluster", who.cluster),
                ("host", who.host),
                ("gpu", who.gpu),
                ("uuid", who.uuid),
                ("model_name", who.model_name),
                ("job_id", who.job_id),
                ("mig_profile", who.mig_profile),
                ("column", column),
                ("fn", fn),
            ):
                rows[key].extend([val] * n)
            rows["ts_ms"].extend(t - (MINUTE_MS - 1) for t in series.times_ms)
            rows["value"].extend(series.values)
    if skipped:
        why = "; ".join(sorted(reasons))
        batch.problems.append(Problem(batch.source, f"{skipped} points of series skipped: series {why}"))
    long = pl.DataFrame(rows, schema=_LONG)
    # NaN and DCGM's blank sentinel are missing values, as in the file path.
    long = long.filter(pl.col("value").is_not_nan() & ~pl.col("value").is_between(BLANK_THRESHOLD, BLANK_CEILING))
    minutes, problems = refuse_implausible(_assemble(long), batch.source)
    batch.add("gpu_minutes", minutes)
    batch.problems.extend(problems)
    return batch


_LONG = {
    "cluster": pl.Utf8,
    "host": pl.Utf8,
    "gpu": pl.Int32,
    "uuid": pl.Utf8,
    "model_name": pl.Utf8,
    "job_id": pl.Utf8,
    "mig_profile": pl.Utf8,
    "ts_ms": pl.Int64,
    "column": pl.Utf8,
    "fn": pl.Utf8,
    "value": pl.Float64,
}


def _assemble(long: pl.DataFrame) -> pl.DataFrame:
    """One row per (GPU, minute) from the per-series rollups; several series of one GPU in a minute
    (its labels changed) combine: sums and counts add, maxima take the max, `last` the last series."""
    if long.is_empty():
        return tables.empty(tables.GPU_MINUTES)
    key = ["cluster", "host", "gpu", "ts_ms"]
    v, col, fn = pl.col("value"), pl.col("column"), pl.col("fn")
    aggs = []
    for column, (_, how) in FIELDS.items():
        if how == "mean":
            total = v.filter((col == column) & (fn == "sum_over_time")).sum()
            count = v.filter((col == column) & (fn == "count_over_time")).sum()
            aggs.append(pl.when(count > 0).then(total / count).alias(column))
        elif how == "max":
            aggs.append(v.filter(col == column).max().alias(column))
        else:
            aggs.append(v.filter(col == column).last().alias(column))
    wide = (
        long.sort([*key, "job_id"], nulls_last=False)
        .group_by(key, maintain_order=True)
        .agg(
            *aggs,
            pl.col("uuid").last(),
            pl.col("model_name").last(),
            pl.col("mig_profile").last(),
            pl.col("job_id").drop_nulls().last(),
        )
        .with_columns(
            pl.when(pl.col("xid") != 0).then(pl.col("xid")).alias("xid"),  # the last non-zero XID, else null
            (pl.col("ts_ms") * 1000).cast(tables.TS).alias("ts"),
        )
        .sort("cluster", "host", "gpu", "ts")
    )
    return tables.conform(wide, tables.GPU_MINUTES)


def backfill(
    client: PromClient,
    start: datetime,
    end: datetime,
    *,
    convention: str,
    watermark: datetime | None = None,
    selector: str = "",
    default_cluster: str = "default",
    chunk_minutes: int = CHUNK_MINUTES,
    on_chunk: Callable[[int, int], None] | None = None,
) -> Iterator[Chunk]:
    """Batches for [start, end) chunk by chunk, starting after `watermark` when one is stored.

    Store each chunk's batch, then its `end` as the source's watermark: a stopped backfill resumes
    at the first chunk not stored (ingest is idempotent, so a chunk stored twice changes nothing).
    """
    lo = to_ms(start)
    if watermark is not None:
        lo = max(lo, to_ms(watermark))
    pieces = chunks(lo, to_ms(end), chunk_minutes) if lo < to_ms(end) else []
    for i, (a, b) in enumerate(pieces):
        batch = gpu_minutes_between(
            client, a, b, convention=convention, selector=selector, default_cluster=default_cluster
        )
        if on_chunk is not None:
            on_chunk(i + 1, len(pieces))
        yield Chunk(batch, to_datetime(a), to_datetime(b), i, len(pieces))
