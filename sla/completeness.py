"""How complete the month's data is, per source and cluster (COMPLETENESS in sla/results.py).

- gpu_minutes: every GPU in the inventory is expected to report each minute of the window from the
  later of the window's start and the GPU's first sighting (a GPU installed mid-month owes nothing
  before it existed); present = distinct GPU-minutes with a row. Detail: the longest silence.
- inference_windows: each replica is expected to report every 5-minute slot between its first and
  last window of the month (replicas come and go with autoscaling, so only gaps inside its life count).
- jobs: records that started in the window are expected to carry eligible_time and gpus_allocated.
"""

from __future__ import annotations

from typing import Any

import polars as pl

from gpusteward import evidence as ev
from gpusteward.tables import INFERENCE_WINDOWS, JOBS, TS, conform
from sla.common import MINUTE, Window, started_in, window_of
from sla.inputs import GPU_INVENTORY, EvaluationInputs
from sla.minute_digest import minute_digest
from sla.results import COMPLETENESS

_SLOT = "5m"
_GPU = ("cluster", "host", "gpu")


def _gpu_gaps(seen: pl.DataFrame, inner: pl.DataFrame, starts: pl.DataFrame, window: Window) -> pl.DataFrame:
    """Every silence of every inventory GPU: cluster, host, gpu, gap_start, gap_end, minutes.

    `seen` holds the digest's GPUs with rows, `inner` the silences inside their data, `starts`
    each GPU's first expected minute (`expected_from`).
    """
    firsts = seen.join(starts, on=list(_GPU), how="inner").filter(
        pl.col("first_ts") > pl.col("expected_from")
    ).select(*_GPU, pl.col("expected_from").alias("gap_start"), pl.col("first_ts").alias("gap_end"))
    after_last = pl.col("last_ts") + pl.duration(minutes=1)
    lasts = seen.filter(after_last < window.end).select(
        *_GPU, after_last.alias("gap_start"), pl.lit(window.end).cast(TS).alias("gap_end")
    )
    silent = starts.join(seen.select(*_GPU), on=list(_GPU), how="anti").filter(
        pl.col("expected_from") < window.end
    ).select(*_GPU, pl.col("expected_from").alias("gap_start"), pl.lit(window.end).cast(TS).alias("gap_end"))
    gaps = pl.concat([f.select(*_GPU, pl.col("gap_start").cast(TS), pl.col("gap_end").cast(TS))
                      for f in (inner, firsts, lasts, silent)])
    return gaps.with_columns(((pl.col("gap_end") - pl.col("gap_start")) / MINUTE).cast(pl.Int64).alias("minutes"))


def _longest(gaps: pl.DataFrame) -> str:
    if gaps.height == 0:
        return ev.encode([ev.part("no_gaps")])
    top = gaps.sort(["minutes", "host", "gpu"], descending=[True, False, False]).row(0, named=True)
    same = gaps.filter(
        (pl.col("host") == top["host"])
        & (pl.col("gap_start") == top["gap_start"])
        & (pl.col("gap_end") == top["gap_end"])
    )
    gpus = ",".join(str(g) for g in sorted(same["gpu"].to_list()))
    return ev.encode([ev.part("gap", host=str(top["host"]), gpus=gpus, start=top["gap_start"], end=top["gap_end"],
                              lasted=ev.duration(top["minutes"] * 60.0))])


def _gpu_minutes(inputs: EvaluationInputs, window: Window) -> list[dict[str, Any]]:
    inventory = (
        conform(inputs.gpus, GPU_INVENTORY)
        .filter(pl.col("first_seen").is_null() | (pl.col("first_seen") < window.end))
        .unique(list(_GPU), keep="first")
    )
    starts = inventory.select(
        *_GPU, pl.max_horizontal(pl.col("first_seen").dt.truncate("1m"), pl.lit(window.start)).alias("expected_from")
    )
    digest = minute_digest(inputs, None)
    seen = digest.gpus.join(inventory.select(*_GPU), on=list(_GPU), how="semi").filter(pl.col("minutes") > 0)
    inner = digest.gaps.join(inventory.select(*_GPU), on=list(_GPU), how="semi")
    expected = starts.with_columns(
        ((pl.lit(window.end) - pl.col("expected_from")) / MINUTE).clip(lower_bound=0).cast(pl.Int64).alias("expected")
    ).group_by("cluster").agg(pl.col("expected").sum())
    present = dict(seen.group_by("cluster").agg(pl.col("minutes").sum()).iter_rows())
    gaps = _gpu_gaps(seen, inner, starts, window)
    rows: list[dict[str, Any]] = []
    for cluster, exp in sorted(expected.iter_rows()):
        have = min(int(present.get(cluster, 0)), int(exp))
        rows.append({"source": "gpu_minutes", "cluster": cluster, "expected": exp, "present": have,
                     "missing": exp - have, "detail": _longest(gaps.filter(pl.col("cluster") == cluster))})
    return rows


def _inference(inputs: EvaluationInputs, window: Window) -> list[dict[str, Any]]:
    frame = conform(inputs.inference_windows, INFERENCE_WINDOWS).filter(
        pl.col("ts").is_between(window.start, window.end, closed="right")  # ts ends a window
    ).with_columns((pl.col("ts") - pl.duration(seconds=1)).dt.truncate(_SLOT).alias("slot"))
    per_replica = frame.group_by("cluster", "service", "instance").agg(
        pl.col("slot").n_unique().alias("present"),
        ((pl.col("slot").max() - pl.col("slot").min()) / pl.duration(minutes=5) + 1).cast(pl.Int64).alias("expected"),
    ).with_columns((pl.col("expected") - pl.col("present")).alias("missing"))
    rows: list[dict[str, Any]] = []
    for cluster, group in sorted(per_replica.group_by("cluster"), key=lambda g: str(g[0][0])):
        worst = group.sort(["missing", "service", "instance"], descending=[True, False, False]).row(0, named=True)
        detail = ev.encode([ev.part(
            "most_missing", service=str(worst["service"]), instance=str(worst["instance"]),
            missing=int(worst["missing"]), expected=int(worst["expected"]),
        ) if worst["missing"] else ev.part("no_gaps")])
        exp, have = int(group["expected"].sum()), int(group["present"].sum())
        rows.append({"source": "inference_windows", "cluster": cluster[0], "expected": exp, "present": have,
                     "missing": exp - have, "detail": detail})
    return rows


def _jobs(inputs: EvaluationInputs, window: Window) -> list[dict[str, Any]]:
    started = conform(inputs.jobs, JOBS).filter(started_in(window))
    stats = started.group_by("cluster").agg(
        pl.len().alias("expected"),
        (pl.col("eligible_time").is_not_null() & pl.col("gpus_allocated").is_not_null()).sum().alias("present"),
        pl.col("eligible_time").is_null().sum().alias("no_eligible"),
        pl.col("gpus_allocated").is_null().sum().alias("no_gpus"),
    ).sort("cluster")
    return [
        {"source": "jobs", "cluster": r["cluster"], "expected": r["expected"], "present": r["present"],
         "missing": r["expected"] - r["present"],
         "detail": ev.encode([ev.part("jobs_missing", no_eligible=int(r["no_eligible"]), no_gpus=int(r["no_gpus"]))])}
        for r in stats.iter_rows(named=True)
    ]


def completeness(inputs: EvaluationInputs) -> pl.DataFrame:
    """COMPLETENESS rows for gpu_minutes, inference_windows and jobs, per cluster."""
    window = window_of(inputs)
    rows = _gpu_minutes(inputs, window) + _inference(inputs, window) + _jobs(inputs, window)
    return pl.DataFrame(rows, schema=COMPLETENESS, orient="row")
