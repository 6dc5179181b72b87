"""dcgm-exporter samples -> GPU_MINUTES: one row per GPU and minute, rolled up with polars.

Per column rollups (see `gpusteward.tables.GPU_MINUTES`): utilisation, graphics-engine activity
and power are the mean over the minute; framebuffer used and temperature the maximum; framebuffer
free and the energy counter the last value; the XID the last non-zero value (else null).

Missing is missing: DCGM's blank sentinels (9223372036854775792 up to 2^63, what older exporters
print for an unsupported field) are dropped before the rollup, and a minute in which a GPU has no
usable sample has no row. NaN and infinite values, values outside a field's physical range
(`RANGES`) and times outside the reader's window are refused with a problem each.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from collectors.batch import Problem
from collectors.numbers import NO_TIMESTAMP
from collectors.plausible import Range, TimeWindow, first_text, out_of_range
from collectors.samples import Samples, Series
from gpusteward import tables
from gpusteward.capacity import MAX_GPU_INDEX, MIG_GPU_BASE, MIG_SLOTS, mig_share
from gpusteward.errors import InputError

# Field -> column, for dcgm-exporter's names and its 1.x names (--use-old-namespace).
_FIELDS = {
    "DCGM_FI_DEV_GPU_UTIL": "gpu_util",
    "DCGM_FI_PROF_GR_ENGINE_ACTIVE": "gr_engine_active",
    "DCGM_FI_DEV_FB_USED": "fb_used_mib",
    "DCGM_FI_DEV_FB_FREE": "fb_free_mib",
    "DCGM_FI_DEV_POWER_USAGE": "power_w",
    "DCGM_FI_DEV_GPU_TEMP": "temp_c",
    "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "energy_mj",
    "DCGM_FI_DEV_XID_ERRORS": "xid",
    "dcgm_gpu_utilization": "gpu_util",
    "dcgm_fi_prof_gr_engine_active": "gr_engine_active",
    "dcgm_fb_used": "fb_used_mib",
    "dcgm_fb_free": "fb_free_mib",
    "dcgm_power_usage": "power_w",
    "dcgm_gpu_temp": "temp_c",
    "dcgm_total_energy_consumption": "energy_mj",
    "dcgm_xid_errors": "xid",
}
# Column -> rollup over the minute, in the order of the table.
ROLLUPS: dict[str, str] = {
    "gpu_util": "mean",
    "gr_engine_active": "mean",
    "fb_used_mib": "max",
    "fb_free_mib": "last",
    "power_w": "mean",
    "temp_c": "max",
    "energy_mj": "last",
    "xid": "last_nonzero",
}
_COLUMNS = list(ROLLUPS)
BLANK_THRESHOLD = 9223372036854775792.0  # DCGM_INT64_BLANK and the sentinels above it, up to 2^63
BLANK_CEILING = float(2**63)
# Physical range of each column (docs/collectors.md, "Validation"); a value outside is refused.
RANGES: dict[str, Range] = {
    "gpu_util": Range(0, 100, "%", "DCGM_FI_DEV_GPU_UTIL is a percentage"),
    "gr_engine_active": Range(0, 1, "(ratio)", "DCGM_FI_PROF_* fields are ratios of time"),
    "fb_used_mib": Range(0, 1 << 20, "MiB", "no GPU has 1 TiB of framebuffer (H200: 141 GB, B300: 288 GB)"),
    "fb_free_mib": Range(0, 1 << 20, "MiB", "as fb_used_mib"),
    "power_w": Range(0, 5000, "W", "the largest boards draw about 1,200 W; negative power is a sensor fault"),
    "temp_c": Range(-40, 150, "C", "GPUs shut down near 100 C; below -40 C no data centre runs"),
    "energy_mj": Range(0, math.inf, "mJ", "a counter since boot never goes below 0"),
    "xid": Range(0, 65535, "", "XID codes are small positive integers; 0 means none"),
}


def is_dcgm(series: Series) -> bool:
    return series.name in _FIELDS


@dataclass(frozen=True)
class GpuIdentity:
    """Who a series is about: the key columns and the attributes that ride along."""

    cluster: str
    host: str
    gpu: int
    uuid: str | None
    model_name: str | None
    job_id: str | None
    mig_profile: str | None = None  # GPU_I_PROFILE of a MIG instance; its share is checked here


def identify(series: Series, default_cluster: str) -> GpuIdentity | str:
    """The GPU (or MIG instance) a dcgm-exporter series describes, or why it cannot be one."""
    labels = series.label_dict
    host = labels.get("Hostname") or labels.get("hostname") or _host_of(labels.get("instance"))
    if "gpu" not in labels or not host:
        return "without gpu and host labels"
    gpu = _index(labels["gpu"], "gpu", MAX_GPU_INDEX)
    if isinstance(gpu, str):
        return gpu
    uuid = labels.get("UUID") or labels.get("uuid") or None
    model = labels.get("modelName") or None
    gi_label = labels.get("GPU_I_ID") or ""
    profile: str | None = None
    if gi_label:
        # A MIG instance is its own row: the table's key is (cluster, host, gpu, ts). With the
        # device below 256 and the instance below 100 no two instances share a number.
        gi = _index(gi_label, "GPU_I_ID", MIG_SLOTS - 1)
        if isinstance(gi, str):
            return gi
        gpu = MIG_GPU_BASE + MIG_SLOTS * gpu + gi
        uuid = f"{uuid}/{gi}" if uuid else None
        profile = labels.get("GPU_I_PROFILE") or None
        if profile is None:
            return "whose GPU_I_ID label comes without GPU_I_PROFILE (the instance's share is unknown)"
        share = mig_share(profile, model)
        if isinstance(share, str):
            return share
        model = f"{model} MIG {profile}" if model else None
    job = labels.get("hpc_job") or None
    if job is None:
        namespace = labels.get("namespace") or labels.get("pod_namespace") or ""
        pod = labels.get("pod") or labels.get("pod_name") or ""
        job = f"{namespace}/{pod}" if namespace and pod else None
    cluster = labels.get("cluster") or default_cluster
    return GpuIdentity(cluster, host, gpu, uuid, model, job, profile)


def _index(text: str, label: str, highest: int) -> int | str:
    """A small non-negative integer label, or why it is not one."""
    if not text.isascii() or not text.isdigit():
        return f"whose {label} label {text[:40]!r} is not an integer"
    value = int(text)
    if value > highest:
        return f"whose {label} label {text[:40]!r} is outside 0..{highest}"
    return value


def _host_of(instance: str | None) -> str | None:
    if not instance:
        return None
    return instance.rsplit(":", 1)[0] if instance.count(":") == 1 else instance


class GpuIndex:
    """Series id -> (column, GPU, device, job) codes, read from the labels once per series.

    A scraper's series ids are stable across cycles, so a long-lived index turns the label work of
    a repeated scrape into array lookups. The key dictionaries only grow; a fleet's GPUs, devices
    and jobs are what they hold.
    """

    def __init__(self, default_cluster: str) -> None:
        self.default_cluster = default_cluster
        self.gpus: dict[tuple[str, str, int], int] = {}
        self.devices: dict[tuple[str | None, str | None, str | None], int] = {}
        self.jobs: dict[str, int] = {}
        self.resolved = np.zeros(0, dtype=np.bool_)
        self.metric_of = np.zeros(0, dtype=np.int8)  # -1: not a GPU_MINUTES field, or no GPU labels
        self.refused_of = np.zeros(0, dtype=np.int32)  # -1, or why the labels name no GPU: reasons[i]
        self.reasons: list[str] = []
        self.gpu_of = np.zeros(0, dtype=np.int32)
        self.dev_of = np.zeros(0, dtype=np.int32)
        self.job_of = np.zeros(0, dtype=np.int32)

    def update(self, series: Sequence[Series], sid: npt.NDArray[np.int64]) -> None:
        """Resolve the series among `sid` not seen before."""
        if not len(sid):
            return
        self._grow(int(sid.max()) + 1)
        present = np.unique(sid)
        for s in present[~self.resolved[present]].tolist():
            self.resolved[s] = True
            column = _FIELDS.get(series[s].name)
            if column is None:
                continue
            who = identify(series[s], self.default_cluster)
            if isinstance(who, str):
                if who not in self.reasons:
                    self.reasons.append(who)
                self.refused_of[s] = self.reasons.index(who)
                continue
            self.metric_of[s] = _COLUMNS.index(column)
            self.gpu_of[s] = self.gpus.setdefault((who.cluster, who.host, who.gpu), len(self.gpus))
            self.dev_of[s] = self.devices.setdefault((who.uuid, who.model_name, who.mig_profile), len(self.devices))
            if who.job_id is not None:
                self.job_of[s] = self.jobs.setdefault(who.job_id, len(self.jobs))

    def _grow(self, size: int) -> None:
        old = len(self.resolved)
        if size <= old:
            return
        size = max(size, 2 * old)

        def grown(a: npt.NDArray[Any], fill: int) -> npt.NDArray[Any]:
            out = np.full(size, fill, dtype=a.dtype)
            out[:old] = a
            return out

        self.resolved = grown(self.resolved, 0)
        self.metric_of = grown(self.metric_of, -1)
        self.refused_of = grown(self.refused_of, -1)
        self.gpu_of = grown(self.gpu_of, 0)
        self.dev_of = grown(self.dev_of, 0)
        self.job_of = grown(self.job_of, -1)


def gpu_minutes(
    samples: Samples,
    *,
    default_cluster: str,
    source: str,
    scrape_ts_ms: int | None = None,
    index: GpuIndex | None = None,
    window: TimeWindow | None = None,
) -> tuple[pl.DataFrame, list[Problem]]:
    """Roll the DCGM samples up to GPU-minutes. Samples without a timestamp take `scrape_ts_ms`.

    Pass the same `index` (built for `default_cluster`) with every batch parsed with one series
    cache, so each series' labels are read once. Samples outside `window`, values outside their
    field's physical range (`RANGES`) and NaN or infinite values are refused, each rule with one
    problem; when every timed sample is outside the window the input is refused (InputError).
    """
    problems: list[Problem] = []
    sid, value, ts = samples.arrays()
    if not len(sid):
        return tables.empty(tables.GPU_MINUTES), problems
    if index is None:
        index = GpuIndex(default_cluster)
    elif index.default_cluster != default_cluster:
        raise ValueError(f"the GPU index is for cluster {index.default_cluster!r}, not {default_cluster!r}")
    index.update(samples.series, sid)
    refused = index.refused_of[sid]
    for i, reason in enumerate(index.reasons):
        n = int(np.count_nonzero(refused == i))
        if n:
            problems.append(Problem(source, f"{n} DCGM samples {reason} were skipped"))

    metric = index.metric_of[sid]
    if scrape_ts_ms is not None:
        ts = np.where(ts == NO_TIMESTAMP, scrape_ts_ms, ts)
    fields = metric >= 0
    untimed = (ts == NO_TIMESTAMP) & fields
    if untimed.any():
        problems.append(Problem(source, f"{int(untimed.sum())} DCGM samples without a timestamp were skipped"))
    blank = (value >= BLANK_THRESHOLD) & (value <= BLANK_CEILING)
    keep = fields & ~untimed & ~blank
    keep &= _in_window(ts, keep, window, source, problems)
    keep &= _plausible(metric, value, keep, source, problems)
    finite = np.isfinite(value)
    _note_non_finite(index, sid, ts, keep, finite, source, problems)
    keep &= finite
    kept = sid[keep]
    frame = pl.DataFrame(
        {
            "g": index.gpu_of[kept],
            "m": metric[keep],
            "v": value[keep],
            "t": ts[keep],
            "dev": index.dev_of[kept],
            "job": index.job_of[kept],
        }
    )
    if frame.is_empty():
        return tables.empty(tables.GPU_MINUTES), problems
    return _rollup(frame, index.gpus, index.devices, index.jobs), problems


def _in_window(
    ts: npt.NDArray[np.int64],
    keep: npt.NDArray[np.bool_],
    window: TimeWindow | None,
    source: str,
    problems: list[Problem],
) -> npt.NDArray[np.bool_]:
    """Samples inside the time window; all outside refuses the input."""
    if window is None:
        return np.ones(len(ts), np.bool_)
    outside = keep & window.outside(ts)
    n = int(np.count_nonzero(outside))
    if n:
        message = window.explain(ts[outside])
        if n == int(np.count_nonzero(keep)):
            raise InputError(source, f"every DCGM sample is {message}")
        problems.append(Problem(source, f"{n} DCGM samples were refused: {message}"))
    inside: npt.NDArray[np.bool_] = ~outside
    return inside


def _plausible(
    metric: npt.NDArray[np.int8],
    value: npt.NDArray[np.float64],
    keep: npt.NDArray[np.bool_],
    source: str,
    problems: list[Problem],
) -> npt.NDArray[np.bool_]:
    """Samples whose value lies in their column's physical range."""
    ok = np.ones(len(value), np.bool_)
    for i, column in enumerate(_COLUMNS):
        rng = RANGES[column]
        bad = keep & (metric == i) & out_of_range(value, rng)
        n = int(np.count_nonzero(bad))
        if n:
            problems.append(
                Problem(
                    source,
                    f"{n} DCGM samples of {column} outside {rng.describe()} were refused"
                    f" (first: {first_text(value[bad])}; {rng.why})",
                )
            )
            ok &= ~bad
    return ok


def _note_non_finite(  # noqa: PLR0917 - the arrays of one reader, named where they are passed
    index: GpuIndex,
    sid: npt.NDArray[np.int64],
    ts: npt.NDArray[np.int64],
    keep: npt.NDArray[np.bool_],
    finite: npt.NDArray[np.bool_],
    source: str,
    problems: list[Problem],
) -> None:
    """One problem for NaN and infinite values, counting the GPU-minutes left with no value at all."""
    bad = keep & ~finite
    n = int(np.count_nonzero(bad))
    if not n:
        return
    key = index.gpu_of[sid].astype(np.int64) << 40 | (ts // 60_000) & ((1 << 40) - 1)
    had = np.setdiff1d(key[bad], key[keep & finite])
    problems.append(
        Problem(
            source,
            f"{n} DCGM samples were NaN or infinite and were left out; {len(had)} GPU-minutes had no other"
            " value and have no row",
        )
    )


def refuse_implausible(frame: pl.DataFrame, source: str) -> tuple[pl.DataFrame, list[Problem]]:
    """GPU-minutes (rolled up elsewhere, e.g. by PromQL) with every value outside its column's
    range or not finite made null, one problem per column; minutes left with no value dropped."""
    problems: list[Problem] = []
    fixes = []
    for column, rng in RANGES.items():
        c = pl.col(column).cast(pl.Float64)
        bad = c.is_not_null() & (~c.is_finite() | (c < rng.low) | (c > rng.high))
        n = int(frame.select(bad.sum()).item() or 0)
        if n:
            message = f"{n} GPU-minutes of {column} outside {rng.describe()} or not finite were refused"
            problems.append(Problem(source, message))
            fixes.append(pl.when(bad).then(None).otherwise(pl.col(column)).alias(column))
    if not fixes:
        return frame, problems
    fixed = frame.with_columns(fixes).filter(pl.any_horizontal(pl.col(c).is_not_null() for c in RANGES))
    return fixed, problems


def _rollup(
    frame: pl.DataFrame,
    gpus: dict[tuple[str, str, int], int],
    devices: dict[tuple[str | None, str | None, str | None], int],
    jobs: dict[str, int],
) -> pl.DataFrame:
    v, m = pl.col("v"), pl.col("m")
    aggs = []
    for i, (column, how) in enumerate(ROLLUPS.items()):
        picked = v.filter(m == i)
        if how == "mean":
            aggs.append(picked.mean().alias(column))
        elif how == "max":
            aggs.append(picked.max().alias(column))
        elif how == "last":
            aggs.append(picked.last().alias(column))
        else:
            aggs.append(v.filter((m == i) & (v != 0)).last().alias(column))
    rolled = (
        frame.sort("t")  # so that `last` is the latest sample; group_by keeps row order in a group
        .with_columns((pl.col("t") // 60_000 * 60_000).alias("minute"))
        .group_by("g", "minute")
        .agg(
            *aggs,
            pl.col("dev").last(),
            pl.col("job").filter(pl.col("job") >= 0).last(),
        )
    )
    gpu_schema = {"g": pl.Int32, "cluster": pl.Utf8, "host": pl.Utf8, "gpu": pl.Int16}
    gpu_keys = _lookup([(i, *key) for key, i in gpus.items()], gpu_schema)
    dev_schema = {"dev": pl.Int32, "uuid": pl.Utf8, "model_name": pl.Utf8, "mig_profile": pl.Utf8}
    dev_keys = _lookup([(i, *key) for key, i in devices.items()], dev_schema)
    job_keys = _lookup([(i, key) for key, i in jobs.items()], {"job": pl.Int32, "job_id": pl.Utf8})
    out = (
        rolled.join(gpu_keys, on="g", how="left")
        .join(dev_keys, on="dev", how="left")
        .join(job_keys, on="job", how="left")
        .with_columns((pl.col("minute") * 1000).cast(tables.TS).alias("ts"))
        .sort("cluster", "host", "gpu", "ts")
    )
    return tables.conform(out, tables.GPU_MINUTES)


def _lookup(rows: Sequence[tuple[object, ...]], schema: dict[str, type[pl.DataType]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=schema, orient="row")
