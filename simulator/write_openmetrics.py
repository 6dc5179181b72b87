"""OpenMetrics text as `promtool tsdb dump-openmetrics` prints a Prometheus that scraped the exporters.

One file per cluster-day, gzip with mtime 0 and no name (same input, same bytes on one machine). Within a family every
series (label set) is contiguous with its samples in time order, as the strict parser requires.
A GPU whose job changes gets a new series (its `hpc_job` label changes); a GPU that returns to a
series it had earlier in the day (idle again, or the same job after a requeue) continues that one.
A time-sliced card's slot rows all carry the card's labels: their samples are one series per
(card, job), whichever of the card's rows they came from.
Lines are built per series with one `bytes.join` over vectorised "value timestamp" strings.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import BinaryIO

import numpy as np
import polars as pl
from isal import isal_zlib

from simulator.fleet import DRIVER_VERSION, GPUS_PER_NODE, Cluster
from simulator.inference import E2E_BUCKETS, TTFT_BUCKETS, ReplicaSeries
from simulator.telemetry import DayValues, xid_text

EXPORTER_PORT = 9400
GZIP_LEVEL = 0  # ISA-L's fastest, which still compresses: a DCGM day to 1/27 of its text (docs/performance.md, "Gzip")
GZIP_BLOCK = 1 << 20  # bytes handed to the compressor at a time

# (family, type, help, DayValues attribute); help texts are dcgm-exporter's default-counters.csv.
DCGM_FAMILIES = (
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "util"),
    ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active.", "gr"),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "fb_used"),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", "fb_free"),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "power"),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "temp"),
    # `unknown` keeps the exposed name valid OpenMetrics: a counter family would need `_total`.
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "unknown", "Total energy consumption since boot (in mJ).", "energy"),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", "xid"),
)


class Gzip:
    """A deterministic gzip stream (no name, mtime 0) built from text chunks, compressed by ISA-L.

    With a `sink` the compressed bytes go straight to it, so a large file never sits in memory.
    ISA-L's output depends on how its input is split, so the input goes to it in blocks of
    GZIP_BLOCK bytes whatever the chunks callers write: the same text gives the same bytes. (Its
    output may differ between CPUs, whose instruction sets choose its code paths; the text does not.)
    ISA-L compresses a day of a cluster's DCGM dump in a fifth of zlib level 1's time.
    """

    def __init__(self, sink: BinaryIO | None = None) -> None:
        self._z = isal_zlib.compressobj(GZIP_LEVEL, isal_zlib.DEFLATED, 31)
        self._pending = bytearray()
        self._parts: list[bytes] = []
        self._sink = sink
        self.size = 0

    def _emit(self, data: bytes) -> None:
        self.size += len(data)
        if self._sink is None:
            self._parts.append(data)
        else:
            self._sink.write(data)

    def write(self, text: str) -> None:
        self.write_bytes(text.encode())

    def write_bytes(self, data: bytes) -> None:
        """UTF-8 text already encoded."""
        self._pending += data
        whole = len(self._pending) - len(self._pending) % GZIP_BLOCK
        if whole:
            with memoryview(self._pending) as view:
                for start in range(0, whole, GZIP_BLOCK):
                    self._emit(self._z.compress(view[start : start + GZIP_BLOCK]))
            del self._pending[:whole]

    def close(self) -> bytes:
        """The whole stream without a sink; with one, flushes into it and returns b""."""
        self._emit(self._z.compress(bytes(self._pending)) + self._z.flush())
        self._pending.clear()
        return b"".join(self._parts)


def ts_strings(ms: np.ndarray) -> pl.Series:
    """Epoch milliseconds as OpenMetrics seconds with three decimals."""
    s = pl.Series(ms.ravel())
    return (s // 1000).cast(pl.Utf8) + "." + (s % 1000).cast(pl.Utf8).str.zfill(3)


def _integral(v: np.ndarray) -> bool:
    """Whether a family's values print as integers: decided once over the family's samples."""
    if np.issubdtype(v.dtype, np.integer):
        return True
    return bool(np.all(v == np.round(v)) and np.abs(v).max(initial=0) < 2**53)


def _values(v: np.ndarray, integral: bool | None = None) -> pl.Series:
    if integral is None:
        integral = _integral(v)
    if np.issubdtype(v.dtype, np.integer) or not integral:
        return pl.Series(v).cast(pl.Utf8)
    return pl.Series(v.astype(np.int64)).cast(pl.Utf8)


def _series_order(
    key: np.ndarray, valid: np.ndarray, row: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Flat sample indices grouped by (label row, key) in order of each group's first minute, then time.

    `row`: per GPU slot, the slot whose labels its series carry (the card's first slot for the
    sessions of a time-sliced card; default: itself). Returns (indices into the flattened arrays,
    group start positions, group label row, group key). A GPU's samples fall into a few stretches
    of one key (a job, or idle between jobs), so the sorting is done on those stretches and the
    samples follow them. The rows of one label row must not hold one key at the same minute.
    """
    m = key.shape[1]
    flat = np.flatnonzero(valid.ravel())
    slot = flat // m
    k = key.ravel()[flat]
    change = np.ones(len(flat), dtype=bool)
    change[1:] = (slot[1:] != slot[:-1]) | (k[1:] != k[:-1])
    seg = np.flatnonzero(change)  # stretch starts, as positions in `flat` (time order within a GPU)
    seg_len = np.diff(np.r_[seg, len(flat)])
    seg_key = k[seg]
    seg_row = slot[seg] if row is None else row[slot[seg]]
    seg_min = flat[seg] % m
    by_key = np.lexsort((seg_min, seg_key, seg_row))
    r1, k1, m1 = seg_row[by_key], seg_key[by_key], seg_min[by_key]
    new = np.ones(len(by_key), dtype=bool)
    new[1:] = (r1[1:] != r1[:-1]) | (k1[1:] != k1[:-1])
    group = np.flatnonzero(new)
    first = np.repeat(m1[group], np.diff(np.r_[group, len(by_key)]))
    # The key breaks ties: two series of one label row may start in the same minute.
    stretches = by_key[np.lexsort((m1, k1, first, r1))]
    lengths = seg_len[stretches]
    before = np.cumsum(lengths) - lengths
    pos = np.repeat(seg[stretches] - before, lengths) + np.arange(len(flat))
    r2, k2 = seg_row[stretches], seg_key[stretches]
    new2 = np.ones(len(stretches), dtype=bool)
    new2[1:] = (r2[1:] != r2[:-1]) | (k2[1:] != k2[:-1])
    g = np.flatnonzero(new2)
    return flat[pos], before[g], r2[g], k2[g]


@dataclass(frozen=True)
class DcgmLabels:
    """Per GPU slot: the dcgm-exporter labels before and after the optional attribute labels, and
    the slot whose labels its series carry (`row`; None when every slot is its own GPU)."""

    head: tuple[str, ...]
    tail: tuple[str, ...]
    row: np.ndarray | None = None


def dcgm_labels(cluster: Cluster) -> DcgmLabels:
    head, tail = [], []
    row = np.arange(cluster.gpus)
    for slot in range(cluster.gpus):
        g = cluster.gpu(slot)
        host, i = g.host, g.index
        # A MIG instance's series: its card's labels, then GPU_I_PROFILE and GPU_I_ID (render_metrics.go order).
        mig = f',GPU_I_PROFILE="{g.mig.profile}",GPU_I_ID="{g.mig.gi}"' if g.mig else ""
        head.append(
            f'gpu="{i}",UUID="{g.uuid}",pci_bus_id="{g.pci_bus_id}",device="nvidia{i}",'
            f'modelName="{g.model}"{mig},Hostname="{host}",DCGM_FI_DRIVER_VERSION="{DRIVER_VERSION}"'
        )
        tail.append(f'instance="{host}:{EXPORTER_PORT}",job="dcgm-exporter",cluster="{cluster.name}"')
        if g.replicas > 1:  # a time-sliced card's sessions: the card's first slot speaks for them
            row[slot] = slot - slot % g.replicas
    shared = bool((row != np.arange(cluster.gpus)).any())
    return DcgmLabels(tuple(head), tuple(tail), row if shared else None)


# Samples per piece of a family's text (about 2.5 MB): a cluster-day of 5,000 GPUs is ~18 GB of
# text, built and compressed a few series at a time. Pieces this small stay in the CPU's cache
# and in memory the allocator reuses; pieces of tens of megabytes cost a fresh mapping (page
# faults) each and took twice the time to build.
CHUNK_SAMPLES = 1 << 13


def render_dcgm(day: DayValues, labels: DcgmLabels) -> bytes:
    """One cluster-day of dcgm-exporter samples as gzipped OpenMetrics."""
    out = Gzip()
    stream_dcgm(day, labels, out)
    return out.close()


def _label_sets(labels: DcgmLabels, slots: np.ndarray, keys: np.ndarray, *, xid: bool) -> list[str]:
    """Each series' `{labels} ` (the metric name goes in front): the GPU's labels and its job's."""
    out = []
    for slot, key in zip(slots.tolist(), keys.tolist(), strict=True):
        job = key // 1000 if xid else key
        attrs = ""
        if xid and key % 1000:
            code = key % 1000
            attrs += f',err_code="{code}",err_msg="{xid_text(code)}"'
        if job:
            attrs += f',hpc_job="{job}"'
        out.append(f"{{{labels.head[slot]}{attrs},{labels.tail[slot]}}} ")
    return out


@dataclass(frozen=True)
class _Order:
    """A family's samples in series order (`_series_order`): each series' first sample, GPU, key
    and labels, and each sample's " timestamp" text. Families that share an order share these."""

    idx: np.ndarray
    starts: np.ndarray
    slots: np.ndarray
    keys: np.ndarray
    label_sets: list[str]
    ts: pl.Series


def _order(day: DayValues, key: np.ndarray, ms: np.ndarray, labels: DcgmLabels, *, xid: bool) -> _Order:
    idx, starts, slots, keys = _series_order(key, day.valid, labels.row)
    return _Order(idx, starts, slots, keys, _label_sets(labels, slots, keys, xid=xid), " " + ts_strings(ms[idx]))


def _xid_order(day: DayValues, ms: np.ndarray, labels: DcgmLabels, by_job: _Order) -> _Order:
    """The XID family's series also split where a GPU's XID changes; on a day without XIDs (most
    cluster-days) they are the jobs' series, only labelled as the XID family labels them."""
    if day.xid.any():
        return _order(day, day.job * 1000 + day.xid, ms, labels, xid=True)
    return replace(by_job, label_sets=_label_sets(labels, by_job.slots, by_job.keys * 1000, xid=True))


def stream_dcgm(day: DayValues, labels: DcgmLabels, out: Gzip) -> None:
    """Write one cluster-day of dcgm-exporter samples into `out` (not closed).

    A series' lines are its prefix (name and labels) joined onto its "value timestamp" strings;
    built as bytes, so nothing is encoded twice."""
    n = day.job.shape[0]
    host_ms = (day.day_start_s + 60 * np.arange(day.job.shape[1], dtype=np.int64))[None, :] * 1000
    ms = np.repeat(host_ms + day.offsets_ms[:, None], GPUS_PER_NODE, axis=0)[:n].ravel()
    by_job = _order(day, day.job, ms, labels, xid=False)
    for name, typ, help_text, attr in DCGM_FAMILIES:
        out.write(f"# HELP {name} {help_text}\n# TYPE {name} {typ}\n")
        order = _xid_order(day, ms, labels, by_job) if attr == "xid" else by_job
        if len(order.idx) == 0:
            continue
        family = getattr(day, attr).ravel()[order.idx]
        value_ts = _values(family, _integral(family)) + order.ts
        prefixes = [(name + p).encode() for p in order.label_sets]
        bounds = [*order.starts.tolist(), len(order.idx)]
        # Pieces end on series boundaries, so together they are the family's text.
        cuts = np.unique(np.searchsorted(order.starts, np.arange(0, len(order.idx), CHUNK_SAMPLES), side="right") - 1)
        for g0, g1 in itertools.pairwise([*cuts.tolist(), len(order.starts)]):
            a = bounds[g0]
            vt = value_ts.slice(a, bounds[g1] - a).cast(pl.Binary).to_list()
            lines = [b""] * (g1 - g0 + 1)
            for i, g in enumerate(range(g0, g1)):
                p = prefixes[g]
                lines[i] = p + (b"\n" + p).join(vt[bounds[g] - a : bounds[g + 1] - a])
            out.write_bytes(b"\n".join(lines))
    out.write("# EOF\n")


# vLLM families in the order the server lists them; help texts from vllm/v1/metrics/loggers.py.
VLLM_GAUGES = (
    ("vllm:num_requests_running", "Number of requests in model execution batches.", "running"),
    ("vllm:num_requests_waiting", "Number of requests waiting to be processed.", "waiting"),
    ("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", "kv_usage"),
)
VLLM_COUNTERS = (
    ("vllm:prompt_tokens", "Number of prefill tokens processed.", "prompt_tokens"),
    ("vllm:generation_tokens", "Number of generation tokens processed.", "generation_tokens"),
)
FINISHED_REASONS = ("stop", "length", "abort")


def instance_offset_ms(instance: str) -> int:
    return sum((i + 3) * ord(c) for i, c in enumerate(instance)) * 104729 % 300_000


def _cells(prefixes: np.ndarray, values: np.ndarray, ts: np.ndarray, by_column: bool = False) -> list[str]:
    """Lines `prefix value ts` for a (times, columns) block: row by row, or column by column."""
    grid = np.strings.add(np.strings.add(prefixes[None, :], values), np.strings.add(" ", ts)[:, None])
    return [str(x) for x in (grid.T if by_column else grid).ravel().tolist()]


def _fmt(v: np.ndarray, decimals: int | None = None) -> np.ndarray:
    if decimals is None:
        return np.asarray(v.astype(np.int64).astype(str))
    return np.asarray(np.char.mod(f"%.{decimals}f", v))


def _le(bound: float) -> str:
    return repr(float(bound))


def render_vllm(series: Sequence[ReplicaSeries], cluster: str, day_start: int, day_end: int) -> bytes:
    """One cluster-day of vLLM /metrics for every replica that was up, as gzipped OpenMetrics."""
    groups: dict[str, list[tuple[ReplicaSeries, np.ndarray]]] = {}
    for s in series:
        inst = f"{s.replica.host_name}:{s.replica.port}"
        mask = (s.t >= day_start) & (s.t < day_end)
        if mask.any():
            groups.setdefault(inst, []).append((s, mask))
    blocks = []
    for inst in sorted(groups, key=lambda i: (groups[i][0][0].replica.service, groups[i][0][0].replica.index)):
        parts = sorted(groups[inst], key=lambda p: int(p[0].t[p[1]][0]))
        rep = parts[0][0].replica
        base = f'model_name="{rep.service}",engine="0",instance="{inst}",job="vllm",cluster="{cluster}"'
        off = instance_offset_ms(inst)
        ts = np.concatenate([s.t[m] for s, m in parts]) * 1000 + off
        blocks.append((base, ts_strings(ts).to_numpy().astype(str), parts))
    out = Gzip()

    def cat(attr: str) -> list[np.ndarray]:
        return [np.concatenate([getattr(s, attr)[m] for s, m in parts]) for _, _, parts in blocks]

    for name, help_text, attr in VLLM_GAUGES:
        out.write(f"# HELP {name} {help_text}\n# TYPE {name} gauge\n")
        for (base, ts, _), v in zip(blocks, cat(attr), strict=True):
            vals = _fmt(v, 4) if attr == "kv_usage" else _fmt(v)
            out.write("\n".join(_cells(np.array([f"{name}{{{base}}} "]), vals[:, None], ts)) + "\n")
    for name, help_text, attr in VLLM_COUNTERS:
        out.write(f"# HELP {name} {help_text}\n# TYPE {name} counter\n")
        for (base, ts, _), v in zip(blocks, cat(attr), strict=True):
            out.write("\n".join(_cells(np.array([f"{name}_total{{{base}}} "]), _fmt(v)[:, None], ts)) + "\n")
    name = "vllm:request_success"
    out.write(f"# HELP {name} Count of successfully processed requests.\n# TYPE {name} counter\n")
    for (base, ts, _), v in zip(blocks, cat("finished"), strict=True):
        for j, reason in enumerate(FINISHED_REASONS):
            pfx = np.array([f'{name}_total{{finished_reason="{reason}",{base}}} '])
            out.write("\n".join(_cells(pfx, _fmt(v[:, j])[:, None], ts)) + "\n")
    # Classic histograms are written as the dump prints them: every `_bucket` (one series per
    # `le`), `_count` and `_sum` series on its own with all its samples, without metadata. With a
    # `# TYPE ... histogram` header a histogram may carry one timestamp only in the strict
    # parsers (prometheus_client drops the repeated bucket lines of later timestamps).
    hists = (
        ("vllm:time_to_first_token_seconds", "ttft", TTFT_BUCKETS),
        ("vllm:e2e_request_latency_seconds", "e2e", E2E_BUCKETS),
    )
    for name, attr, bounds in hists:
        les = [*(_le(b) for b in bounds), "+Inf"]
        counts_all, sums_all = cat(attr), cat(f"{attr}_sum")
        for (base, ts, _), counts in zip(blocks, counts_all, strict=True):
            pfx = np.array([f'{name}_bucket{{le="{le}",{base}}} ' for le in les])
            out.write("\n".join(_cells(pfx, _fmt(counts), ts, by_column=True)) + "\n")
        for (base, ts, _), counts in zip(blocks, counts_all, strict=True):
            out.write("\n".join(_cells(np.array([f"{name}_count{{{base}}} "]), _fmt(counts[:, -1:]), ts)) + "\n")
        for (base, ts, _), sums in zip(blocks, sums_all, strict=True):
            out.write("\n".join(_cells(np.array([f"{name}_sum{{{base}}} "]), _fmt(sums, 3)[:, None], ts)) + "\n")
    out.write("# EOF\n")
    return out.close()
