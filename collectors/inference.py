"""Inference-server samples -> INFERENCE_WINDOWS: what one replica did between two scrapes.

Each server is read through its `InferenceMapping` (collectors/inference_mappings.py: vLLM,
SGLang, TGI, Triton, the Gateway API inference extension and Envoy AI Gateway built in, more from
the config). A window ends at each scrape of a replica (cluster, service, instance) that has an
earlier scrape; `window_s` is the time since that earlier scrape, so a missed scrape makes one
longer window rather than a gap in the counts. Counter and histogram-bucket increases are
counter-reset aware: when any counter of a replica went down, the replica restarted, and every
series' increase is its new value (counted from 0). A series that appears while its replica was
already being scraped (vLLM creates `finished_reason="abort"` at the first abort) counts its whole
value. Requests and errors come from the mapping's selectors (for vLLM: `request_success_total`
over every finished_reason; errors are `abort` and `error`); a server without an error signal has
`errors = null`. Gauges are their value at the end of the window, summed over engines
(`kv_cache_usage` averaged). Latencies are converted to seconds with the mapping's scale.

`WindowState` carries each series' last sample and each replica's last scrape time from one
file to the next, so day files read in order lose no window at midnight.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from collectors.batch import Problem
from collectors.inference_mappings import InferenceMapping, MappingIndex
from collectors.labels import Labels
from collectors.numbers import NO_TIMESTAMP
from collectors.plausible import TimeWindow, first_text
from collectors.samples import Samples
from gpusteward import tables

# Counters first (roles below RUNNING get increases), then gauges.
(REQUESTS, ERRORS, E2E_BUCKET, E2E_SUM, E2E_COUNT, TTFT_BUCKET, TTFT_SUM, TTFT_COUNT, PROMPT, GENERATION) = range(10)
RUNNING, WAITING, KV = range(10, 13)
_SUMS = {"requests": REQUESTS, "e2e_sum": E2E_SUM, "ttft_sum": TTFT_SUM}
_SUMS |= {"prompt_tokens": PROMPT, "generation_tokens": GENERATION}
DEFAULT_INDEX = MappingIndex()

Replica = tuple[str, str, str]  # cluster, service (model_name), instance
SeriesKey = tuple[str, str, Labels]  # cluster, sample name, labels


@dataclass
class WindowState:
    """The last cumulative sample of every vLLM series and the last scrape of every replica."""

    series: dict[SeriesKey, tuple[int, float]] = field(default_factory=dict)
    replicas: dict[Replica, int] = field(default_factory=dict)


@dataclass
class _Attrs:
    role: np.ndarray
    replica: np.ndarray
    le: np.ndarray
    error: np.ndarray  # the series counts failed requests
    error_signal: np.ndarray  # the series' server reports errors at all
    scale: np.ndarray  # multiplies values into seconds (latency sums) or leaves them
    replicas: list[Replica]
    keys: dict[int, SeriesKey]
    unnamed: np.ndarray  # a known server's series without its service label
    service_labels: set[str]


def inference_windows(
    samples: Samples,
    *,
    default_cluster: str,
    source: str,
    state: WindowState | None = None,
    default_instance: str = "default",
    scrape_ts_ms: int | None = None,
    mappings: MappingIndex = DEFAULT_INDEX,
    window: TimeWindow | None = None,
) -> tuple[pl.DataFrame, list[Problem]]:
    """Windows between consecutive scrapes; `state` (updated in place) links files read in order.

    Refused with a problem, never stored: samples outside `window`, NaN or infinite values,
    negative counters and gauges, a KV-cache ratio outside 0..1, and series of a known server
    without its service label.
    """
    state = state if state is not None else WindowState()
    problems: list[Problem] = []
    sid, value, ts = samples.arrays()
    attrs = _attributes(samples, np.unique(sid), default_cluster, default_instance, mappings)
    role = attrs.role[sid] if len(sid) else np.zeros(0, np.int8)
    unnamed = int(np.count_nonzero(attrs.unnamed[sid])) if len(sid) else 0
    if unnamed:
        problems.append(
            Problem(
                source,
                f"{unnamed} inference samples without the service label"
                f" ({' or '.join(sorted(attrs.service_labels)) or 'none configured'}) were skipped",
            )
        )
    if scrape_ts_ms is not None:
        ts = np.where(ts == NO_TIMESTAMP, scrape_ts_ms, ts)
    untimed = (role >= 0) & (ts == NO_TIMESTAMP)
    if untimed.any():
        problems.append(Problem(source, f"{int(untimed.sum())} inference samples without a timestamp were skipped"))
    keep = (role >= 0) & ~untimed
    keep &= _plausible(role, value, ts, keep, window, source, problems)
    kept = sid[keep]
    cur = pl.DataFrame(
        {
            "sid": kept,
            "t": ts[keep],
            "v": value[keep] * attrs.scale[kept] if len(kept) else value[keep],
        },
        schema={"sid": pl.Int64, "t": pl.Int64, "v": pl.Float64},
    )
    if cur.is_empty():
        return tables.empty(tables.INFERENCE_WINDOWS), problems
    cur = _with_attrs(cur, attrs)
    windows = _windows(cur, attrs, state)
    out = _aggregate(cur, _earlier(cur, attrs, state), windows, attrs)
    _remember(cur, attrs, state)
    return out, problems


def _plausible(  # noqa: PLR0917 - the arrays of one reader
    role: np.ndarray,
    value: np.ndarray,
    ts: np.ndarray,
    keep: np.ndarray,
    window: TimeWindow | None,
    source: str,
    problems: list[Problem],
) -> np.ndarray:
    """Samples with a plausible time and value; one problem per rule broken."""
    ok = np.ones(len(value), np.bool_)
    if window is not None:
        outside = keep & window.outside(ts)
        if outside.any():
            problems.append(
                Problem(source, f"{int(outside.sum())} inference samples were refused: {window.explain(ts[outside])}")
            )
            ok &= ~outside
    rules = (
        (keep & ~np.isfinite(value), "were NaN or infinite"),
        (keep & (value < 0), "were negative (counters and gauges count up from 0)"),
        (keep & (role == KV) & (value > 1), "of KV-cache use were above 1 (it is a ratio 0..1)"),
    )
    for broken, what in rules:
        bad = broken & ok
        if bad.any():
            first = first_text(value[bad])
            message = f"{int(bad.sum())} inference samples {what} and were refused (first: {first})"
            problems.append(Problem(source, message))
            ok &= ~bad
    return ok


def _attributes(
    samples: Samples, present: np.ndarray, default_cluster: str, default_instance: str, mappings: MappingIndex
) -> _Attrs:
    size = int(present.max()) + 1 if len(present) else 0
    attrs = _Attrs(
        role=np.full(size, -1, np.int8),
        replica=np.zeros(size, np.int32),
        le=np.full(size, math.nan),
        error=np.zeros(size, np.bool_),
        error_signal=np.zeros(size, np.bool_),
        scale=np.ones(size, np.float64),
        replicas=[],
        keys={},
        unnamed=np.zeros(size, np.bool_),
        service_labels=set(),
    )
    index: dict[Replica, int] = {}
    for s in present.tolist():
        series = samples.series[s]
        labels = series.label_dict
        for mapping in mappings.mappings_for(series.name):
            found = _role(mapping, series.name, labels)
            service = mapping.service_of(labels)
            if found is not None and service is None:
                attrs.unnamed[s] = True
                attrs.service_labels.update(mapping.service_labels)
            if found is None or service is None:
                continue
            role, scale = found
            if role in (E2E_BUCKET, TTFT_BUCKET):
                try:
                    # "+Inf", "Inf" and "inf" all read as inf; bounds move to seconds with the scale.
                    attrs.le[s] = float(labels.get("le", "")) * scale
                except ValueError:
                    break
            cluster = labels.get("cluster") or default_cluster
            instance = labels.get("instance") or labels.get("pod") or default_instance
            attrs.role[s] = role
            attrs.scale[s] = scale if role in (E2E_SUM, TTFT_SUM) else 1.0
            attrs.replica[s] = index.setdefault((cluster, service, instance), len(index))
            attrs.error[s] = any(sel.name == series.name and sel.matches(labels) for sel in mapping.errors)
            # Only a series named like an error counter shows whether errors happened: vLLM's
            # request_success_total does (its abort series appears at the first abort), an old
            # SGLang's histogram count does not, and its windows say "errors unknown".
            attrs.error_signal[s] = any(sel.name == series.name for sel in mapping.errors)
            attrs.keys[s] = (cluster, series.name, series.labels)
            attrs.unnamed[s] = False  # an earlier mapping's miss does not count
            break
    attrs.replicas = list(index)
    return attrs


def _role(mapping: InferenceMapping, name: str, labels: dict[str, str]) -> tuple[int, float] | None:
    """The role of one sample name under a mapping, and the factor that turns it into seconds."""
    scale = mapping.latency_scale
    for bases, bucket, total, count in (
        (mapping.e2e, E2E_BUCKET, E2E_SUM, E2E_COUNT),
        (mapping.ttft, TTFT_BUCKET, TTFT_SUM, TTFT_COUNT),
    ):
        for base in bases:
            if name == f"{base}_bucket":
                return bucket, scale
            if name == f"{base}_sum":
                return total, scale
            if name == f"{base}_count":
                # Without a request counter, the e2e histogram's count is the finished requests.
                counts_requests = count == E2E_COUNT and not mapping.requests
                return (REQUESTS if counts_requests else count), 1.0
    if any(sel.name == name and sel.matches(labels) for sel in mapping.requests):
        return REQUESTS, 1.0
    if any(sel.name == name and sel.matches(labels) for sel in mapping.errors):
        return ERRORS, 1.0
    for selectors, role in ((mapping.prompt_tokens, PROMPT), (mapping.generation_tokens, GENERATION)):
        if any(sel.name == name and sel.matches(labels) for sel in selectors):
            return role, 1.0
    for names, role in ((mapping.running, RUNNING), (mapping.waiting, WAITING), (mapping.kv_cache, KV)):
        if name in names:
            return role, 1.0
    return None


def _with_attrs(frame: pl.DataFrame, attrs: _Attrs) -> pl.DataFrame:
    s = frame["sid"].to_numpy()
    return frame.with_columns(
        pl.Series("role", attrs.role[s]),
        pl.Series("rep", attrs.replica[s]),
        pl.Series("le", attrs.le[s]),
        pl.Series("err", attrs.error[s]),
        pl.Series("err_signal", attrs.error_signal[s]),
    )


def _earlier(cur: pl.DataFrame, attrs: _Attrs, state: WindowState) -> pl.DataFrame:
    """The last sample before this input of each series, from the state."""
    first = cur.group_by("sid").agg(pl.col("t").min())
    rows = []
    for s, t0 in first.iter_rows():
        prior = state.series.get(attrs.keys[s])
        if prior is not None and prior[0] < t0:
            rows.append((s, prior[0], prior[1]))
    earlier = pl.DataFrame(rows, schema={"sid": pl.Int64, "t": pl.Int64, "v": pl.Float64}, orient="row")
    return _with_attrs(earlier, attrs)


def _windows(cur: pl.DataFrame, attrs: _Attrs, state: WindowState) -> pl.DataFrame:
    """(rep, t, prev_t) for every scrape of a replica that follows an earlier scrape."""
    scrapes = cur.select("rep", "t").unique().sort("rep", "t")
    before = pl.DataFrame(
        [(i, state.replicas.get(r)) for i, r in enumerate(attrs.replicas)],
        schema={"rep": pl.Int32, "before": pl.Int64},
        orient="row",
    )
    return (
        scrapes.with_columns(pl.col("t").shift(1).over("rep").alias("prev_t"))
        .join(before, on="rep", how="left")
        .with_columns(
            pl.coalesce(
                "prev_t", pl.when(pl.col("before") < pl.col("t").min().over("rep")).then(pl.col("before"))
            ).alias("prev_t")
        )
        .filter(pl.col("prev_t").is_not_null())
        .select("rep", "t", "prev_t")
    )


def _aggregate(cur: pl.DataFrame, earlier: pl.DataFrame, windows: pl.DataFrame, attrs: _Attrs) -> pl.DataFrame:
    counters = (
        pl.concat([earlier, cur.filter(pl.col("role") < RUNNING)])
        .sort("sid", "t")
        .with_columns((pl.col("v") - pl.col("v").shift(1).over("sid")).alias("delta"))
    )
    resets = counters.group_by("rep", "t").agg((pl.col("delta") < 0).any().alias("reset"))
    increases = (
        counters.join(windows, on=["rep", "t"], how="inner")
        .join(resets, on=["rep", "t"], how="left")
        .with_columns(
            pl.when(pl.col("delta").is_null() | pl.col("reset"))
            .then(pl.col("v"))
            .otherwise(pl.col("delta"))
            .alias("inc")
        )
    )
    inc, role = pl.col("inc"), pl.col("role")
    sums = increases.group_by("rep", "t").agg(
        *(pl.when((role == r).any()).then(inc.filter(role == r).sum()).alias(name) for name, r in _SUMS.items()),
        pl.when(pl.col("err_signal").any()).then(inc.filter(pl.col("err")).sum()).alias("errors"),
    )
    v = pl.col("v")
    gauges = (
        cur.filter(pl.col("role") >= RUNNING)
        .join(windows, on=["rep", "t"], how="inner")
        .group_by("rep", "t")
        .agg(
            pl.when((role == RUNNING).any()).then(v.filter(role == RUNNING).sum()).alias("running"),
            pl.when((role == WAITING).any()).then(v.filter(role == WAITING).sum()).alias("waiting"),
            v.filter(role == KV).mean().alias("kv_cache_usage"),
        )
    )
    out = windows.join(sums, on=["rep", "t"], how="left").join(gauges, on=["rep", "t"], how="left")
    for prefix, bucket in (("e2e", E2E_BUCKET), ("ttft", TTFT_BUCKET)):
        out = out.join(_buckets(increases, bucket, prefix), on=["rep", "t"], how="left")
    names = pl.DataFrame(
        [(i, *r) for i, r in enumerate(attrs.replicas)],
        schema={"rep": pl.Int32, "cluster": pl.Utf8, "service": pl.Utf8, "instance": pl.Utf8},
        orient="row",
    )
    out = out.join(names, on="rep", how="left").with_columns(
        (pl.col("t") * 1000).cast(tables.TS).alias("ts"),
        ((pl.col("t") - pl.col("prev_t")) / 1000).round().cast(pl.Int32).alias("window_s"),
    )
    return tables.conform(out.sort("cluster", "service", "instance", "ts"), tables.INFERENCE_WINDOWS)


def _buckets(increases: pl.DataFrame, role: int, prefix: str) -> pl.DataFrame:
    """Bucket bounds (ascending, +Inf last) and their summed increases, one list pair per window."""
    return (
        increases.filter(pl.col("role") == role)
        .group_by("rep", "t", "le")
        .agg(pl.col("inc").sum())
        .sort("rep", "t", "le")
        .group_by("rep", "t", maintain_order=True)
        .agg(pl.col("le").alias(f"{prefix}_le"), pl.col("inc").alias(f"{prefix}_counts"))
    )


def _remember(cur: pl.DataFrame, attrs: _Attrs, state: WindowState) -> None:
    last = cur.sort("t").group_by("sid").agg(pl.col("t").last(), pl.col("v").last())
    for s, t, v in last.iter_rows():
        key = attrs.keys[s]
        prior = state.series.get(key)
        if prior is None or prior[0] <= t:
            state.series[key] = (t, v)
    for rep, t in cur.group_by("rep").agg(pl.col("t").max()).iter_rows():
        replica = attrs.replicas[rep]
        state.replicas[replica] = max(t, state.replicas.get(replica, t))
