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

import numpy as np
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


def gpu_minutes(
    samples: Samples,
    *,
    default_cluster: str,
    source: str,
    scrape_ts_ms: int | None = None,
) -> tuple[pl.DataFrame, list[Problem]]:
    """Roll the DCGM samples up to GPU-minutes. Samples without a timestamp take `scrape_ts_ms`."""
    problems: list[Problem] = []
    sid, value, ts = samples.arrays()
    if not len(sid):
        return tables.empty(tables.GPU_MINUTES), problems
    present = np.unique(sid)
    metric_of = np.full(int(present.max()) + 1, -1, dtype=np.int8)
    gpu_of = np.zeros(len(metric_of), dtype=np.int32)
    dev_of = np.zeros(len(metric_of), dtype=np.int32)
    job_of = np.full(len(metric_of), -1, dtype=np.int32)
    gpus: dict[tuple[str, str, int], int] = {}
    devices: dict[tuple[str | None, str | None], int] = {}
    jobs: dict[str, int] = {}
    unlabelled_of = np.zeros(len(metric_of), dtype=np.bool_)
    for s in present.tolist():
        series = samples.series[s]
        column = _FIELDS.get(series.name)
        if column is None:
            continue
        who = identify(series, default_cluster)
        if who is None:
            unlabelled_of[s] = True
            continue
        metric_of[s] = _COLUMNS.index(column)
        gpu_of[s] = gpus.setdefault((who.cluster, who.host, who.gpu), len(gpus))
        dev_of[s] = devices.setdefault((who.uuid, who.model_name), len(devices))
        if who.job_id is not None:
            job_of[s] = jobs.setdefault(who.job_id, len(jobs))
    unlabelled = int(np.count_nonzero(unlabelled_of[sid]))
    if unlabelled:
        problems.append(Problem(source, f"{unlabelled} DCGM samples without gpu and host labels were skipped"))

    metric = metric_of[sid]
    if scrape_ts_ms is not None:
        ts = np.where(ts == NO_TIMESTAMP, scrape_ts_ms, ts)
    untimed = (ts == NO_TIMESTAMP) & (metric >= 0)
    if untimed.any():
        problems.append(Problem(source, f"{int(untimed.sum())} DCGM samples without a timestamp were skipped"))
    keep = (metric >= 0) & ~untimed & np.isfinite(value) & (value < BLANK_THRESHOLD)
    frame = pl.DataFrame(
        {
            "g": gpu_of[sid[keep]],
            "m": metric[keep],
            "v": value[keep],
            "t": ts[keep],
            "dev": dev_of[sid[keep]],
            "job": job_of[sid[keep]],
        }
    )
    if frame.is_empty():
        return tables.empty(tables.GPU_MINUTES), problems
    return _rollup(frame, gpus, devices, jobs), problems


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
