"""dcgm-exporter samples -> GPU_MINUTES: one row per GPU and minute, rolled up with polars.

Per column rollups (see `gpusteward.tables.GPU_MINUTES`): utilisation, graphics-engine activity
and power are the mean over the minute; framebuffer used and temperature the maximum; framebuffer
free and the energy counter the last value; the XID the last non-zero value (else null).

Missing is missing: NaN values and DCGM's blank sentinels (at or above 9223372036854775792, what
older exporters print for an unsupported field) are dropped before the rollup, and a minute in
which a GPU has no usable sample has no row.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

from collectors.batch import Problem
from collectors.numbers import NO_TIMESTAMP
from collectors.samples import Samples, Series
from gpusteward import tables

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
BLANK_THRESHOLD = 9223372036854775792.0  # DCGM_INT64_BLANK and the sentinels above it
MIG_GPU_BASE = 1000  # a MIG instance is gpu 1000 + 100 * device index + GPU_I_ID


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


def identify(series: Series, default_cluster: str) -> GpuIdentity | None:
    """The GPU (or MIG instance) a dcgm-exporter series describes, or None without host/gpu labels."""
    labels = series.label_dict
    host = labels.get("Hostname") or labels.get("hostname") or _host_of(labels.get("instance"))
    try:
        gpu = int(labels["gpu"])
    except (KeyError, ValueError):
        return None
    if not host:
        return None
    uuid = labels.get("UUID") or labels.get("uuid") or None
    model = labels.get("modelName") or None
    gi = labels.get("GPU_I_ID") or ""
    if gi:
        # A MIG instance is its own row: the table's key is (cluster, host, gpu, ts).
        try:
            gpu = MIG_GPU_BASE + 100 * gpu + int(gi)
        except ValueError:
            return None
        uuid = f"{uuid}/{gi}" if uuid else None
        profile = labels.get("GPU_I_PROFILE") or ""
        model = f"{model} MIG {profile}".strip() if model else None
    job = labels.get("hpc_job") or None
    if job is None:
        namespace = labels.get("namespace") or labels.get("pod_namespace") or ""
        pod = labels.get("pod") or labels.get("pod_name") or ""
        job = f"{namespace}/{pod}" if namespace and pod else None
    cluster = labels.get("cluster") or default_cluster
    return GpuIdentity(cluster, host, gpu, uuid, model, job)


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
        self.devices: dict[tuple[str | None, str | None], int] = {}
        self.jobs: dict[str, int] = {}
        self.resolved = np.zeros(0, dtype=np.bool_)
        self.metric_of = np.zeros(0, dtype=np.int8)  # -1: not a GPU_MINUTES field, or no GPU labels
        self.unlabelled_of = np.zeros(0, dtype=np.bool_)
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
            if who is None:
                self.unlabelled_of[s] = True
                continue
            self.metric_of[s] = _COLUMNS.index(column)
            self.gpu_of[s] = self.gpus.setdefault((who.cluster, who.host, who.gpu), len(self.gpus))
            self.dev_of[s] = self.devices.setdefault((who.uuid, who.model_name), len(self.devices))
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
        self.unlabelled_of = grown(self.unlabelled_of, 0)
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
) -> tuple[pl.DataFrame, list[Problem]]:
    """Roll the DCGM samples up to GPU-minutes. Samples without a timestamp take `scrape_ts_ms`.

    Pass the same `index` (built for `default_cluster`) with every batch parsed with one series
    cache, so each series' labels are read once.
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
    unlabelled = int(np.count_nonzero(index.unlabelled_of[sid]))
    if unlabelled:
        problems.append(Problem(source, f"{unlabelled} DCGM samples without gpu and host labels were skipped"))

    metric = index.metric_of[sid]
    if scrape_ts_ms is not None:
        ts = np.where(ts == NO_TIMESTAMP, scrape_ts_ms, ts)
    untimed = (ts == NO_TIMESTAMP) & (metric >= 0)
    if untimed.any():
        problems.append(Problem(source, f"{int(untimed.sum())} DCGM samples without a timestamp were skipped"))
    keep = (metric >= 0) & ~untimed & np.isfinite(value) & (value < BLANK_THRESHOLD)
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


def _rollup(
    frame: pl.DataFrame,
    gpus: dict[tuple[str, str, int], int],
    devices: dict[tuple[str | None, str | None], int],
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
    dev_schema = {"dev": pl.Int32, "uuid": pl.Utf8, "model_name": pl.Utf8}
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
