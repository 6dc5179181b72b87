"""Did each account's limit bind? (pure) Peak and p95 concurrent GPUs, the business-hours peak, time at
the limit, and the GPU-hours its jobs waited by cause (quota.waits), per cluster and account.

A limit binds when the account's running GPUs reach it while its own jobs wait on it (Slurm's
AssocGrpGRES). A limit above the account's peak never bound: lowering it to the peak frees nothing for
anyone, because Slurm's GrpTRES and Kueue's nominalQuota are caps, not reservations (a Kueue
ClusterQueue's unused nominalQuota is lent to its cohort anyway, up to its lendingLimit).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from zoneinfo import ZoneInfo

import numpy as np
import polars as pl

from sla.contention import Timeline

BINDING = pl.Schema(
    {
        "cluster": pl.Utf8,
        "account": pl.Utf8,
        "gpu_limit": pl.Int64,  # null: unlimited
        "peak_gpus": pl.Float64,
        "p95_gpus": pl.Float64,  # time-weighted: the account ran at most this many GPUs 95% of the time
        "business_peak_gpus": pl.Float64,  # peak inside business hours, local time
        "at_limit_s": pl.Float64,  # seconds its running GPUs were at (or above) the limit
        "waits": pl.Int64,  # its records that waited inside the window
        "limit_waits": pl.Int64,  # ... mostly on its own limit
        "limit_wait_gpu_hours": pl.Float64,  # GPUs asked x seconds waited on its limit
        "priority_wait_gpu_hours": pl.Float64,
        "capacity_wait_gpu_hours": pl.Float64,
        "placement_wait_gpu_hours": pl.Float64,
    }
)


def business_hours(text: str) -> tuple[int, int]:
    """"09:00-21:00" as (open, close) seconds after local midnight; close <= open wraps past midnight."""
    found = re.fullmatch(r"\s*(\d\d?):(\d\d)\s*-\s*(\d\d?):(\d\d)\s*", text)
    if found is None:
        raise ValueError(f"quota.business_hours: expected HH:MM-HH:MM, got {text!r}")
    oh, om, ch, cm = (int(g) for g in found.groups())
    if oh > 24 or ch > 24 or om > 59 or cm > 59:
        raise ValueError(f"quota.business_hours: {text!r} is not a time of day")
    return oh * 3600 + om * 60, ch * 3600 + cm * 60


def business_cuts(start: datetime, end: datetime, zone: str, hours: str) -> tuple[np.ndarray, np.ndarray]:
    """(cuts, opens): the local opening and closing times of business hours inside [start, end) as
    seconds after start (start and end naive UTC), and which of the cuts are openings."""
    opens, closes = business_hours(hours)
    tz = ZoneInfo(zone)
    local = start.replace(tzinfo=ZoneInfo("UTC")).astimezone(tz).date() - timedelta(days=1)
    last = end.replace(tzinfo=ZoneInfo("UTC")).astimezone(tz).date() + timedelta(days=1)
    cuts: list[float] = []
    is_open: list[bool] = []
    day = local
    while day <= last:
        midnight = datetime(day.year, day.month, day.day, tzinfo=tz)
        for offset, opening in ((opens, True), (closes, False)):
            moment = (midnight + timedelta(seconds=offset)).astimezone(ZoneInfo("UTC")).replace(tzinfo=None)
            cuts.append((moment - start).total_seconds())
            is_open.append(opening)
        day += timedelta(days=1)
    order = np.argsort(cuts, kind="stable")
    return np.asarray(cuts)[order], np.asarray(is_open)[order]


def in_business(line: Timeline, cuts: np.ndarray, opens: np.ndarray) -> np.ndarray:
    """Whether each piece of the timeline lies inside business hours (pieces are cut at the opening
    and closing times, so each is wholly in or out)."""
    if len(cuts) == 0:
        return np.zeros(len(line.bounds) - 1, dtype=bool)
    at = np.searchsorted(cuts, line.bounds[:-1], side="right") - 1
    return np.where(at >= 0, opens[np.clip(at, 0, None)], ~opens[0])


def _p95(values: np.ndarray, seconds: np.ndarray) -> float:
    if seconds.sum() <= 0:
        return 0.0
    order = np.argsort(values)
    cumulative = np.cumsum(seconds[order]) / seconds.sum()
    return float(values[order][min(len(order) - 1, int(np.searchsorted(cumulative, 0.95)))])


def binding(
    accounts: Mapping[str, Timeline],
    limits: Mapping[tuple[str, str], int | None],
    waits: pl.DataFrame,
    business: Mapping[str, np.ndarray],
) -> pl.DataFrame:
    """BINDING per (cluster, account) with a limit or with work; waits: quota.waits.WAIT_CAUSES;
    business: per cluster, the in-business-hours mask of its timeline's pieces."""
    gpu_hours = {
        c: waits.group_by("cluster", "account").agg(
            (pl.col(f"{c}_s") * pl.col("gpus")).sum().truediv(3600.0).alias(c),
        )
        for c in ("limit", "priority", "capacity", "placement")
    }
    counts = waits.group_by("cluster", "account").agg(
        pl.len().cast(pl.Int64).alias("waits"),
        (pl.col("cause") == "limit").sum().cast(pl.Int64).alias("limit_waits"),
    )
    lookup = {c: {(r["cluster"], r["account"]): r[c] for r in f.iter_rows(named=True)} for c, f in gpu_hours.items()}
    count_of = {(r["cluster"], r["account"]): (r["waits"], r["limit_waits"]) for r in counts.iter_rows(named=True)}
    keys = sorted(set(limits) | {(c, a) for c, line in accounts.items() for a in line.running})
    rows = []
    for cluster, account in keys:
        line = accounts.get(cluster)
        limit = limits.get((cluster, account))
        run = line.running.get(account) if line is not None else None
        if line is None or run is None:
            run, secs, mask = np.zeros(1), np.zeros(1), np.zeros(1, dtype=bool)
        else:
            secs = line.seconds
            mask = business.get(cluster, np.zeros(len(secs), dtype=bool))
        inside = run[mask & (secs > 0)]
        rows.append({
            "cluster": cluster, "account": account, "gpu_limit": limit,
            "peak_gpus": float(run.max(initial=0.0)), "p95_gpus": _p95(run, secs),
            "business_peak_gpus": float(inside.max(initial=0.0)),
            "at_limit_s": float(secs[run >= limit].sum()) if limit is not None else 0.0,
            "waits": count_of.get((cluster, account), (0, 0))[0],
            "limit_waits": count_of.get((cluster, account), (0, 0))[1],
            **{f"{c}_wait_gpu_hours": float(lookup[c].get((cluster, account)) or 0.0)
               for c in ("limit", "priority", "capacity", "placement")},
        })
    return pl.DataFrame(rows, schema=BINDING, orient="row")
