"""Prometheus-API backfill of inference servers: the raw samples, read into the same windows.

A window is what one replica did between two of its scrapes, so the backfill needs the stored
samples themselves with their own timestamps, not values evaluated on a step grid (`rate()` and
`increase()` extrapolate, and `last_over_time` on a grid loses the scrape times). It asks
`/api/v1/query` for a range selector, `{__name__=~"<every name a mapping knows>"}[<chunk>]` at
the end of each chunk, which returns every stored sample of the chunk, and feeds them, in time
order and with one `WindowState` across chunks, to `inference_windows`: the windows, buckets and
counter resets come out exactly as from a direct import of the same scrapes.

Chunks are half-open `[start, end)`; each query's range is 1 ms shorter on a server with closed
windows (Prometheus 2.x), so a sample on a chunk boundary is read once on either convention
(`collectors/promapi.py`). Prometheus drops a range query over 50 million samples by default
(`--query.max-samples`): keep `chunk_minutes` x series per chunk below it.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime

from collectors.backfill import to_datetime, to_ms
from collectors.batch import CollectedBatch, Problem
from collectors.inference import WindowState, inference_windows
from collectors.inference_mappings import DEFAULT_INDEX, MappingIndex, sample_names
from collectors.promapi import CLOSED, PromApiError, PromClient, rfc3339
from collectors.samples import Samples, Series

CHUNK_MINUTES = 60
MINUTE_MS = 60_000


@dataclass(frozen=True)
class InferenceChunk:
    start: datetime
    end: datetime  # store the batch, then set the watermark to this
    batch: CollectedBatch


def name_regex(mappings: MappingIndex = DEFAULT_INDEX) -> str:
    """Every sample name the mappings read, as one `__name__` regex (names need no escaping)."""
    names = set[str]().union(*(sample_names(m) for m in mappings.mappings))
    return "|".join(sorted(names))


def raw_samples(client: PromClient, selector: str, start_ms: int, end_ms: int, *, convention: str) -> Samples:
    """Every stored sample of `selector` in [start_ms, end_ms), ordered by time."""
    span = end_ms - start_ms - (1 if convention == CLOSED else 0)
    query = f"{selector}[{span}ms]"
    # The client's retrying GET; range vectors come only from an instant query.
    response = client._get("/api/v1/query", {"query": query, "time": rfc3339(end_ms - 1)})
    try:
        body = response.json()
    except ValueError:
        body = {}
    if response.status_code != 200 or not isinstance(body, dict) or body.get("status") != "success":
        error = body.get("error", response.text[:200]) if isinstance(body, dict) else response.text[:200]
        raise PromApiError(f"{client.url}: {query!r}: HTTP {response.status_code}: {error}")
    series: list[Series] = []
    rows: list[tuple[int, int, float]] = []  # ts, series id, value
    for item in body["data"]["result"]:
        metric = dict(item["metric"])
        name = metric.pop("__name__", "")
        sid = len(series)
        series.append(Series(name, tuple(sorted(metric.items())), name, "untyped"))
        rows.extend((round(float(t) * 1000), sid, float(v)) for t, v in item.get("values", []))
    rows.sort()
    out = Samples(series)
    out.timestamp_ms = array("q", (r[0] for r in rows))
    out.series_id = array("q", (r[1] for r in rows))
    out.value = array("d", (r[2] for r in rows))
    return out


def inference_windows_between(
    client: PromClient,
    start_ms: int,
    end_ms: int,
    *,
    convention: str,
    state: WindowState,
    mappings: MappingIndex = DEFAULT_INDEX,
    matchers: str = "",
    default_cluster: str = "default",
) -> CollectedBatch:
    """The windows ending at scrapes in [start_ms, end_ms); `state` links consecutive calls.

    `matchers`: extra label matchers, e.g. `cluster="a"` (without braces).
    """
    selector = f'{{__name__=~"{name_regex(mappings)}"{", " + matchers if matchers else ""}}}'
    samples = raw_samples(client, selector, start_ms, end_ms, convention=convention)
    source = f"promapi:{client.url}"
    frame, problems = inference_windows(
        samples, default_cluster=default_cluster, source=source, state=state, mappings=mappings
    )
    batch = CollectedBatch(source)
    batch.problems.extend(problems)
    batch.add("inference_windows", frame)
    return batch


def backfill_inference(
    client: PromClient,
    start: datetime,
    end: datetime,
    *,
    convention: str,
    watermark: datetime | None = None,
    state: WindowState | None = None,
    mappings: MappingIndex = DEFAULT_INDEX,
    matchers: str = "",
    default_cluster: str = "default",
    chunk_minutes: int = CHUNK_MINUTES,
) -> Iterator[InferenceChunk]:
    """Chunks of windows from `start` (or the watermark) to `end`, oldest first.

    A resumed backfill starts without the series' last samples, so its first scrape of each
    replica is a baseline: pass the `state` of the run that set the watermark to lose no window.
    """
    state = state if state is not None else WindowState()
    first = to_ms(max(start, watermark) if watermark is not None else start)
    last = to_ms(end)
    step = chunk_minutes * MINUTE_MS
    for lo in range(first, last, step):
        hi = min(lo + step, last)
        batch = inference_windows_between(
            client,
            lo,
            hi,
            convention=convention,
            state=state,
            mappings=mappings,
            matchers=matchers,
            default_cluster=default_cluster,
        )
        if batch.problems:
            batch.problems[:] = [Problem(batch.source, f"{to_datetime(lo)}: {p.message}") for p in batch.problems]
        yield InferenceChunk(to_datetime(lo), to_datetime(hi), batch)
