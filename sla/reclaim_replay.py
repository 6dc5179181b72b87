"""Which turns of a reclaimer turning every `interval` could decide anything, so a replay runs only those.

The live reclaimer plans every evaluation interval (15 minutes by default) and writes a ledger line
only for a candidate at stage `warn` or `act` (sla.reclaim_decide). A replay of a month that planned
at every turn would cost a month of turns (about 3,000); this module picks the turns at which the
live job could have written something, and the replay plans at those alone, with the live job's
own evaluator, so it decides what the live job would have decided at the same instants.

Pure: frames in, instants out.
- **Spans** (`idle_spans`, `quiet_spans`): when a job can be a candidate at all. A minute-based
  policy's candidate has been idle for `idle_for` up to the last whole minute before the turn, so
  every one of its GPUs is inside an idle stretch (consecutive below-threshold minutes of one job on
  one GPU) that began `idle_for` or more before: a turn `t` with `first + idle_for <= t <= stop`
  (`stop` the minute after the stretch's last). A no_traffic candidate's service has been without
  requests for `idle_for`: between two windows with traffic (or unknown counts) further apart than
  that. The spans may hold more than the candidates (any policy's shortest `idle_for`, any GPU of the
  job), never less.
- **Next turn** (`next_turn`): after a turn, when the job's row of the plan could change what is
  decided. A warned candidate waits out its grace (nothing is written until `action_due`); an acted
  one is done for its run; a job left alone, capped or paused is looked at again at the next turn
  while its span lasts, because who waits, the cap or its other GPUs may change then.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from gpusteward.tables import TS, schema
from sla.common import naive_utc

IDLE_STRETCHES = schema({"cluster": pl.Utf8, "job_id": pl.Utf8, "first": TS, "stop": TS})
"""One GPU's stretch of consecutive below-threshold minutes of one job: its first minute, and the minute
after its last (warehouse.reclaim.idle_stretches)."""
SPANS = schema({"kind": pl.Utf8, "cluster": pl.Utf8, "key": pl.Utf8, "first": TS, "last": TS})
"""When a job (kind `job`, key its job id) or a service's replicas (kind `service`, key the service) can be
candidates: turns in [first, last]."""


def turn_at_or_after(moment: datetime, origin: datetime, interval: timedelta) -> datetime:
    """The first turn of a reclaimer turning every `interval` from `origin` at or after `moment`."""
    steps = -(-(naive_utc(moment) - naive_utc(origin)) // interval)
    return naive_utc(origin) + interval * max(steps, 1)


def idle_spans(stretches: pl.DataFrame, idle_for: timedelta) -> pl.DataFrame:
    """SPANS of jobs from their GPUs' idle stretches (IDLE_STRETCHES) at least `idle_for` long."""
    return stretches.filter(pl.col("stop") - pl.col("first") >= idle_for).select(
        pl.lit("job").alias("kind"), "cluster", pl.col("job_id").alias("key"),
        (pl.col("first") + idle_for).alias("first"), pl.col("stop").alias("last"),
    ).cast(dict(SPANS))  # type: ignore[arg-type]


def quiet_spans(windows: pl.DataFrame, idle_for: timedelta, start: datetime) -> pl.DataFrame:
    """SPANS of services from their inference windows (INFERENCE_WINDOWS): quiet for `idle_for` or longer
    between two windows with traffic or an unknown count (from `start`, and to a window length and a
    minute after the last window, when the service reports no more)."""
    if windows.is_empty():
        return pl.DataFrame(schema=SPANS)
    per_end = windows.group_by("cluster", "service", "ts").agg(
        (pl.col("requests").is_null() | (pl.col("requests") > 0)).any().alias("traffic"),
        pl.col("window_s").max().alias("window_s"),
    )
    rows: list[dict[str, Any]] = []
    for (cluster, service), group in per_end.sort("ts").group_by(["cluster", "service"], maintain_order=True):
        busy = group.filter(pl.col("traffic"))["ts"].to_list()
        last = group.row(-1, named=True)
        tail = last["ts"] + timedelta(seconds=int(last["window_s"] or 0)) + timedelta(minutes=1)
        for since, until in zip([naive_utc(start), *busy], [*busy, tail], strict=True):
            if until - since >= idle_for:
                rows.append({"kind": "service", "cluster": cluster, "key": service, "first": since + idle_for,
                             "last": until})
    return pl.DataFrame(rows, schema=SPANS, orient="row") if rows else pl.DataFrame(schema=SPANS)


def next_turn(row: Mapping[str, Any] | None, at: datetime, origin: datetime, interval: timedelta) -> datetime | None:
    """When the plan's row of a job (None: the job is not planned: not running, or no policy covers it)
    could next make the reclaimer write something, after the turn at `at`; None: not in this run."""
    if row is None:
        return None
    following = naive_utc(at) + interval
    if row["verdict"] == "candidate":
        if row["stage"] in ("warn", "grace") and row["action"] != "notify":
            return max(turn_at_or_after(row["action_due"], origin, interval), following)
        return None  # acted on (once a run), or a notify policy's warning given
    if row["verdict"] == "left_alone" and row["reason"] == "min_replicas":
        return None  # kept while its service runs this many replicas
    return following
