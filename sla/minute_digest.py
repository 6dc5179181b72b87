"""What the evaluation needs from a month's GPU-minutes, reduced so the minutes need not stay in memory.

A month of 10,000 GPUs is 446 million GPU-minutes: far more than memory holds as a frame. Every
evaluator needs only sums per job and day, per GPU and per host, plus the gaps and idle runs, and
each of those is exact when computed over a set of whole hosts: runs and gaps never cross a GPU,
and host silences never cross a host. So the warehouse hands the month over a few hosts at a time
(`digest_minutes` per chunk) and `merge_digests` joins the parts; a digest built from one frame of
the whole month is the same digest.

Frames (naive UTC timestamps):
- job_days: (cluster, job_id, day in the pool's time zone) with the idle states of its minutes (sla.idle.minute_states)
  in whole-GPU-equivalent minutes (`gpu_minutes`, `busy_minutes`, `idle_minutes`, `idle_held_minutes`,
  `zero_minutes`: each GPU-minute counts its GPU's share, so an hour of a 1g.10gb instance of an
  H100 counts 60/7 minutes; floats, rounded only where a result stores them), how many minutes
  took their utilisation from each source, and the utilisation sum over the minutes with a value
  (`util_sum` / `util_minutes` is the mean, 0..1, both counted per GPU row, unweighted), and how
  many of those were exactly 0 (`zero_minutes`: no engine activity at all, whether or not inside an
  idle run). Idle detection itself stays per row: a MIG instance's runs are its own.
- gpus: (cluster, host, gpu) with rows, distinct minutes, first and last minute, idle states and
  unallocated minutes (utilisation but no job), the row's own minutes (one row is one GPU or one
  MIG instance: not weighted)
- host_silences: per host, the longest run of minutes in which none of its GPUs reported, inside its data
- gaps: every silence inside one GPU's data (from the minute after a row to the next row)
- idle_runs: every idle run (sla.idle.idle_runs)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import polars as pl

from gpusteward.capacity import mig_share
from gpusteward.config.schema import IdleConfig
from gpusteward.tables import GPU_MINUTES, TS, conform, schema
from sla.common import MINUTE, Window, local_date, window_of
from sla.idle_states import BUSY, IDLE, IDLE_HELD, idle_runs_of, in_gpu_order, same_gpu, states_in_gpu_order
from sla.inputs import EvaluationInputs

_GPU = ("cluster", "host", "gpu")
_JOB_DAY = ("cluster", "job_id", "day")

JOB_DAYS = schema({
    "cluster": pl.Utf8, "job_id": pl.Utf8, "day": pl.Date,
    # whole-GPU-equivalent minutes (each minute x its GPU's share)
    "gpu_minutes": pl.Float64, "busy_minutes": pl.Float64, "idle_minutes": pl.Float64, "idle_held_minutes": pl.Float64,
    # GPU rows' minutes, unweighted
    "engine_minutes": pl.Int64, "gpu_util_minutes": pl.Int64, "util_minutes": pl.Int64, "util_sum": pl.Float64,
    "zero_minutes": pl.Float64,  # whole-GPU-equivalent minutes
})
GPUS = schema({
    "cluster": pl.Utf8, "host": pl.Utf8, "gpu": pl.Int16, "rows": pl.Int64, "minutes": pl.Int64,
    "first_ts": TS, "last_ts": TS, "busy_minutes": pl.Int64, "idle_minutes": pl.Int64,
    "idle_held_minutes": pl.Int64, "unallocated_minutes": pl.Int64,
})
HOST_SILENCES = schema({
    "cluster": pl.Utf8, "host": pl.Utf8, "gap_start": TS, "gap_end": TS, "gap_minutes": pl.Int64,
})
GAPS = schema({"cluster": pl.Utf8, "host": pl.Utf8, "gpu": pl.Int16, "gap_start": TS, "gap_end": TS})
IDLE_RUNS = schema({
    "cluster": pl.Utf8, "host": pl.Utf8, "gpu": pl.Int16, "job_id": pl.Utf8, "start": TS, "minutes": pl.Int64,
    "held": pl.Boolean,
})
_SUMMED = [c for c in JOB_DAYS if c not in _JOB_DAY]


@dataclass(frozen=True)
class MinuteDigest:
    window: Window
    idle: IdleConfig
    job_days: pl.DataFrame
    gpus: pl.DataFrame
    host_silences: pl.DataFrame
    gaps: pl.DataFrame
    idle_runs: pl.DataFrame

    def per_job(self) -> pl.DataFrame:
        """job_days summed over the days: one row per (cluster, job_id)."""
        return self.job_days.group_by("cluster", "job_id").agg(pl.col(_SUMMED).sum())


def whole_minutes(frame: pl.DataFrame) -> pl.DataFrame:
    """Summed job_days minutes (floats, whole-GPU equivalents) rounded to whole minutes so the parts
    still add up: idle-held, idle + idle-held and (where present) the GPU-minutes are each rounded,
    idle and busy are the differences, so busy + idle + idle-held = gpu_minutes as before rounding."""
    wasted = (pl.col("idle_minutes") + pl.col("idle_held_minutes")).round(0)
    held = pl.col("idle_held_minutes").round(0)
    out = [held.cast(pl.Int64).alias("idle_held_minutes"), (wasted - held).cast(pl.Int64).alias("idle_minutes")]
    if "gpu_minutes" in frame.columns:
        gpu = pl.col("gpu_minutes").round(0)
        out += [gpu.cast(pl.Int64).alias("gpu_minutes"), (gpu - wasted).cast(pl.Int64).alias("busy_minutes")]
    if "zero_minutes" in frame.columns:
        out.append(pl.col("zero_minutes").round(0).cast(pl.Int64).alias("zero_minutes"))
    return frame.with_columns(out)


def utilisation() -> pl.Expr:
    """Utilisation 0..1 of a GPU-minute: GR_ENGINE_ACTIVE when present, else GPU_UTIL / 100."""
    return (
        pl.when(pl.col("gr_engine_active").is_not_null())
        .then(pl.col("gr_engine_active").cast(pl.Float64))
        .otherwise(pl.col("gpu_util").cast(pl.Float64) / 100.0)
    )


def gpu_shares(gpu_minutes: pl.DataFrame) -> pl.DataFrame:
    """(cluster, host, gpu, share): what each GPU row is worth in whole GPUs, as the warehouse stores it
    (`gpus.share`): a MIG instance its slices of the card (from its latest GPU_I_PROFILE and model
    name, gpusteward.capacity.mig_share), any other row 1. A profile that does not parse counts 1."""
    gm = conform(gpu_minutes, GPU_MINUTES)
    profiled = gm.filter(pl.col("mig_profile").is_not_null())
    latest = (
        profiled.sort("ts").group_by(*_GPU).agg(pl.col("mig_profile").last(), pl.col("model_name").last())
        if profiled.height else pl.DataFrame(schema={**{c: gm.schema[c] for c in _GPU}, "mig_profile": pl.Utf8,
                                                     "model_name": pl.Utf8})
    )
    pairs = latest.select("mig_profile", "model_name").unique()
    shares = [mig_share(p, m) for p, m in pairs.iter_rows()]
    lookup = pairs.with_columns(
        pl.Series("share", [s if isinstance(s, float) else 1.0 for s in shares], pl.Float64)
    )
    out = gm.select(*_GPU).unique().join(
        latest.join(lookup, on=["mig_profile", "model_name"], how="left", nulls_equal=True).select(*_GPU, "share"),
        on=list(_GPU), how="left",
    )
    return out.with_columns(pl.col("share").fill_null(1.0))


def digest_minutes(gpu_minutes: pl.DataFrame, window: Window, idle: IdleConfig) -> MinuteDigest:
    """The digest of GPU-minutes that hold every row of their hosts in `window` (rows outside it are left out)."""
    gm = in_gpu_order(
        conform(gpu_minutes, GPU_MINUTES).filter(pl.col("ts").is_between(window.start, window.end, closed="left"))
    )
    states = states_in_gpu_order(gm, idle)
    shares = gpu_shares(gm).filter(pl.col("share") != 1.0)
    if shares.is_empty():
        gm = gm.with_columns(pl.lit(1.0).alias("share"))
        states = states.with_columns(pl.lit(1.0).alias("share"))
    else:
        keyed = shares.select(pl.struct(*_GPU).hash(seed=0).alias("_gpu_key"), "share")  # as in_gpu_order keys

        def weighed(frame: pl.DataFrame) -> pl.DataFrame:
            joined = frame.join(keyed, on="_gpu_key", how="left", maintain_order="left")
            return joined.with_columns(pl.col("share").fill_null(1.0))

        gm, states = weighed(gm), weighed(states)
    gm = gm.with_columns((same_gpu() & (pl.col("ts") == pl.col("ts").shift(1))).alias("_repeat"))
    distinct = gm.filter(~pl.col("_repeat")).select(*_GPU, "ts")  # still in GPU order
    return MinuteDigest(
        window=window,
        idle=idle,
        job_days=_job_days(gm, states, window.tz),
        gpus=_gpus(gm, states),
        host_silences=_host_silences(distinct, window),
        gaps=_gaps(distinct),
        idle_runs=conform(idle_runs_of(states), IDLE_RUNS),
    )


def merge_digests(parts: Iterable[MinuteDigest], window: Window, idle: IdleConfig) -> MinuteDigest:
    """One digest from the digests of disjoint sets of hosts (a job may run on hosts of several parts)."""
    parts = list(parts)
    for part in parts:
        if part.window != window or part.idle != idle:
            raise ValueError("minute digests of different windows or idle settings cannot be merged")

    def stacked(name: str, frame_schema: pl.Schema) -> pl.DataFrame:
        frames = [getattr(p, name) for p in parts]
        return pl.concat(frames, how="vertical") if frames else pl.DataFrame(schema=frame_schema)

    job_days = stacked("job_days", JOB_DAYS)
    if len(parts) > 1:
        job_days = job_days.group_by(*_JOB_DAY).agg(pl.col(_SUMMED).sum())
    return MinuteDigest(
        window=window,
        idle=idle,
        job_days=conform(job_days, JOB_DAYS),
        gpus=stacked("gpus", GPUS),
        host_silences=stacked("host_silences", HOST_SILENCES),
        gaps=stacked("gaps", GAPS),
        idle_runs=stacked("idle_runs", IDLE_RUNS),
    )


def minute_digest(inputs: EvaluationInputs, idle: IdleConfig | None) -> MinuteDigest:
    """The digest of `inputs`: the one the warehouse built, else one made from `gpu_minutes` (and kept).

    `idle` None: the caller reads only what does not depend on the idle settings (rows, minutes,
    gaps, silences), so any digest will do.
    """
    given = inputs.minute_digest
    if given is not None:
        if idle is not None and given.idle != idle:
            raise ValueError(
                f"the month's GPU-minutes were digested with idle settings {given.idle}, not {idle}: "
                "read the evaluation inputs again with the configured [idle] settings"
            )
        return given
    cache = inputs.digest_cache
    if idle is None:
        idle = next(iter(cache), IdleConfig())
    if idle not in cache:
        cache[idle] = digest_minutes(inputs.gpu_minutes, window_of(inputs), idle)
    return cache[idle]


def _job_days(gm: pl.DataFrame, states: pl.DataFrame, tz: str) -> pl.DataFrame:
    w = pl.col("share")

    def weighted(state: str) -> pl.Expr:
        return pl.when(pl.col("state") == state).then(w).otherwise(0.0).sum()

    counted = states.with_columns(local_date(pl.col("ts"), tz).alias("day")).group_by(*_JOB_DAY).agg(
        w.sum().alias("gpu_minutes"),
        weighted(BUSY).alias("busy_minutes"),
        weighted(IDLE).alias("idle_minutes"),
        weighted(IDLE_HELD).alias("idle_held_minutes"),
        (pl.col("util_source") == "gr_engine_active").sum().cast(pl.Int64).alias("engine_minutes"),
        (pl.col("util_source") == "gpu_util").sum().cast(pl.Int64).alias("gpu_util_minutes"),
    )
    util = (
        gm.filter(pl.col("job_id").is_not_null())
        .select("cluster", "job_id", local_date(pl.col("ts"), tz).alias("day"), utilisation().alias("_u"), "share")
        .filter(pl.col("_u").is_not_null() & pl.col("_u").is_not_nan())
        .group_by(*_JOB_DAY)
        .agg(
            pl.len().cast(pl.Int64).alias("util_minutes"),
            pl.col("_u").sum().alias("util_sum"),
            pl.when(pl.col("_u") == 0.0).then(pl.col("share")).otherwise(0.0).sum().alias("zero_minutes"),
        )
    )
    out = counted.join(util, on=list(_JOB_DAY), how="full", coalesce=True)
    return conform(out.with_columns(pl.col(_SUMMED).fill_null(0)), JOB_DAYS)


def _gpus(gm: pl.DataFrame, states: pl.DataFrame) -> pl.DataFrame:
    util = pl.coalesce(pl.col("gr_engine_active"), pl.col("gpu_util"))
    first = ~pl.col("_repeat")
    # Grouped on the GPU's 64-bit hash (in_gpu_order), far faster than on its three columns; two
    # GPUs would have to share a hash to be counted together.
    present = gm.group_by("_gpu_key").agg(
        pl.col(*_GPU).first(),
        pl.len().cast(pl.Int64).alias("rows"),
        first.sum().cast(pl.Int64).alias("minutes"),
        pl.col("ts").min().alias("first_ts"),
        pl.col("ts").max().alias("last_ts"),
        (first & pl.col("job_id").is_null() & util.is_not_null() & ~util.is_nan())
        .sum().cast(pl.Int64).alias("unallocated_minutes"),
    )
    by_state = states.group_by("_gpu_key").agg(
        (pl.col("state") == BUSY).sum().cast(pl.Int64).alias("busy_minutes"),
        (pl.col("state") == IDLE).sum().cast(pl.Int64).alias("idle_minutes"),
        (pl.col("state") == IDLE_HELD).sum().cast(pl.Int64).alias("idle_held_minutes"),
    )
    out = present.join(by_state, on="_gpu_key", how="left")
    counts = ["busy_minutes", "idle_minutes", "idle_held_minutes"]
    return conform(out.with_columns(pl.col(counts).fill_null(0)), GPUS)


def _host_silences(distinct: pl.DataFrame, window: Window) -> pl.DataFrame:
    # Each host's reporting minutes as (host hash, minute number): sorting two integer columns is
    # far cheaper than sorting the host's names with the times. A hash collision could only hide
    # a silence.
    hosts = distinct.select("cluster", "host", pl.struct("cluster", "host").hash(seed=0).alias("_host"))
    minutes = (
        pl.DataFrame({"_host": hosts["_host"], "_m": ((distinct["ts"] - window.start) / MINUTE).cast(pl.Int64)})
        .unique()
        .sort("_host", "_m")
    )
    runs = minutes.with_columns(
        (pl.col("_m") - pl.col("_m").shift(1)).alias("_step"),
        (pl.col("_host") == pl.col("_host").shift(1)).alias("_same"),
    ).filter(pl.col("_same") & (pl.col("_step") > 1)).select(
        "_host",
        (pl.lit(window.start) + pl.duration(minutes=pl.col("_m") - pl.col("_step") + 1)).alias("gap_start"),
        (pl.lit(window.start) + pl.duration(minutes=pl.col("_m"))).alias("gap_end"),
        (pl.col("_step") - 1).alias("gap_minutes"),
    )
    longest = (
        runs.sort(["gap_minutes", "gap_start"], descending=[True, False])
        .group_by("_host", maintain_order=True)
        .first()
        .join(hosts.unique(subset="_host"), on="_host")
    )
    return conform(longest, HOST_SILENCES)


def _gaps(distinct: pl.DataFrame) -> pl.DataFrame:
    gaps = distinct.with_columns(pl.col("ts").shift(1).alias("prev")).filter(
        same_gpu() & ((pl.col("ts") - pl.col("prev")) > pl.lit(MINUTE))
    )
    return conform(
        gaps.select(*_GPU, (pl.col("prev") + pl.duration(minutes=1)).alias("gap_start"), pl.col("ts").alias("gap_end")),
        GAPS,
    )
