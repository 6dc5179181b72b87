"""Why each job waited (pure): its own account's limit, priority (QOS), capacity, or placement.

Slurm names the reason a pending job does not start (job_reason_codes): `AssocGrp*` / `QOSGrp*` when
the association's or QOS's aggregate limit (GrpTRES gres/gpu) is reached, `Priority` when jobs of
higher priority go first, `Resources` when the resources are in use. Kueue's equivalents: a workload
that does not fit its ClusterQueue's nominalQuota plus what it may borrow from the cohort
(borrowingLimit, bounded by the lenders' lendingLimit) waits on quota; one that fits its quota but
not the nodes waits on capacity.

Each second a record waited is given one cause, in this order:
1. limit: the account's running GPUs plus the job's exceed the account's limit (AssocGrpGRES). Only
   this wait can a bigger limit shorten.
2. placement: the cluster had enough free GPUs in total, yet the job did not start: the GPUs were
   not on the nodes the job needs, or a reservation for a job ahead of it held them.
3. priority: the cluster was full, mostly (more than half of the GPUs in use) with jobs of a QOS of
   higher priority, which held enough GPUs that the job would have fit without them (a high-QOS
   training holding the nodes a low-QOS evaluation waits for). A bigger quota cannot shorten this
   wait; a QOS or guaranteed-share change can.
4. capacity: the cluster was full, mostly with work of the same or lower priority (Resources): only
   more GPUs shorten it.

Pending reasons the scheduler recorded (snapshots of `squeue`/slurmrestd: cluster, job_id, ts,
reason) override the derivation for the stretch each snapshot covers (`cause_of_reason`). Without
them the causes are derived from the records, the limits and the cluster's size, and say so.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl

from sla.contention import Timeline

Cause = Literal["limit", "placement", "priority", "capacity"]
CAUSES: tuple[Cause, ...] = ("limit", "placement", "priority", "capacity")

WAIT_CAUSES = pl.Schema(
    {
        "cluster": pl.Utf8,
        "job_id": pl.Int64,
        "account": pl.Utf8,
        "team": pl.Utf8,
        "queue": pl.Utf8,  # cluster/partition
        "qos": pl.Utf8,
        "gpus": pl.Int64,
        "wait_s": pl.Float64,  # inside the window
        "limit_s": pl.Float64,
        "placement_s": pl.Float64,
        "priority_s": pl.Float64,
        "capacity_s": pl.Float64,
        "cause": pl.Utf8,  # the cause of most of the wait; null when it did not wait
        "source": pl.Utf8,  # reasons | derived
        "holders": pl.Utf8,  # QOS/team of higher priority holding the most GPUs during its priority wait
    }
)

_LIMIT_REASONS = ("AssocGrp", "QOSGrp", "MaxGRESPerAccount", "MaxTRESPerAccount")


def cause_of_reason(reason: str | None) -> Cause | None:
    """A Slurm pending reason as a cause; None for reasons that are none of them (BeginTime, Dependency)."""
    if not reason:
        return None
    if reason.startswith(_LIMIT_REASONS):
        return "limit"
    if reason == "Priority":
        return "priority"
    if reason == "Resources":
        return "capacity"
    if reason.startswith(("ReqNodeNotAvail", "Reservation", "NodeDown", "BadConstraints")):
        return "placement"
    return None


@dataclass(frozen=True)
class Scheduler:
    """What the derivation knows of one cluster's scheduler: its GPUs, account limits and QOS priorities."""

    gpus: int | None
    limits: Mapping[str, int | None]  # account -> GrpTRES gres/gpu (None: unlimited)
    qos_priority: Mapping[str, int]  # QOS -> priority (missing: 0)


def _qos(key: str) -> str:
    """The QOS of a `qos/team` timeline key."""
    return key.split("/", 1)[0]


def _holder(holders: Timeline, qos_priority: Mapping[str, int], mine: int, piece: slice, weight: np.ndarray) -> str:
    """The `qos/team` of higher priority that held the most GPU-seconds over the weighted pieces."""
    held = {k: float(np.dot(run[piece], weight)) for k, run in holders.running.items()
            if qos_priority.get(_qos(k), 0) > mine}
    held = {k: v for k, v in held.items() if v > 0}
    return min(held, key=lambda k: (-held[k], k)) if held else ""


def wait_causes(
    spans: pl.DataFrame,
    accounts: Mapping[str, Timeline],
    qos: Mapping[str, Timeline],
    schedulers: Mapping[str, Scheduler],
    reasons: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """WAIT_CAUSES, one row per record that waited inside the window.

    spans: sla.contention.SPANS; accounts, qos: its timelines by account and by `qos/team` (the same
    pieces: built with the same cuts); reasons: pending
    snapshots (cluster, job_id, ts_s: seconds after the window's start, reason), optional.
    """
    snapshots: dict[tuple[str, int], list[tuple[float, Cause | None]]] = {}
    if reasons is not None:
        for r in reasons.sort("ts_s").iter_rows(named=True):
            snapshots.setdefault((r["cluster"], r["job_id"]), []).append((r["ts_s"], cause_of_reason(r["reason"])))
    rows = []
    waited = spans.filter(pl.col("pend_e") > pl.col("pend_s"))
    for r in waited.iter_rows(named=True):
        cluster, account, gpus = r["cluster"], r["account"], int(r["gpus"])
        line, qline, sched = accounts.get(cluster), qos.get(cluster), schedulers.get(cluster)
        if line is None or qline is None:
            continue
        piece = line.pieces(r["pend_s"], r["pend_e"])
        secs = np.diff(np.clip(line.bounds[piece.start:piece.stop + 1], r["pend_s"], r["pend_e"]))
        cause = np.full(len(secs), 3)  # capacity
        running = line.total_running()[piece]
        own = line.running.get(str(account), line.zeros())[piece]
        limit = sched.limits.get(str(account)) if sched else None
        mine = (sched.qos_priority.get(str(r["qos"]), 0) if sched else 0)
        higher = sum((run[piece] for q, run in qline.running.items()
                      if sched is not None and sched.qos_priority.get(_qos(q), 0) > mine), np.zeros(len(secs)))
        total = sched.gpus if sched else None
        if total is not None:
            free = total - running
            cause[free >= gpus] = 1  # placement
            # Full, and mostly with work that ranks above the job's: priority; else capacity.
            cause[(free < gpus) & (free + higher >= gpus) & (2 * higher > running)] = 2
        if limit is not None:
            cause[own + gpus > limit] = 0
        source = "derived"
        marks = snapshots.get((cluster, int(r["job_id"])))
        if marks:
            source = "reasons"
            starts = line.bounds[piece.start:piece.stop]
            for i, (ts, found) in enumerate(marks):
                until = marks[i + 1][0] if i + 1 < len(marks) else np.inf
                if found is not None:
                    cause[(starts >= ts) & (starts < until) | ((starts < ts) & (i == 0))] = CAUSES.index(found)
        by: dict[str, float] = {c: float(secs[cause == i].sum()) for i, c in enumerate(CAUSES)}
        wait = float(secs.sum())
        main: str | None = max(CAUSES, key=by.__getitem__) if wait > 0 else None
        holders = ""
        if by["priority"] > 0 and sched is not None:
            holders = _holder(qline, sched.qos_priority, mine, piece, secs * (cause == 2))
        rows.append({
            "cluster": cluster, "job_id": r["job_id"], "account": account, "team": r["team"],
            "queue": f"{cluster}/{r['partition'] or '?'}", "qos": r["qos"], "gpus": gpus, "wait_s": wait,
            "limit_s": by["limit"], "placement_s": by["placement"], "priority_s": by["priority"],
            "capacity_s": by["capacity"], "cause": main, "source": source, "holders": holders,
        })
    return pl.DataFrame(rows, schema=WAIT_CAUSES, orient="row")
