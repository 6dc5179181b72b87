"""Why each job waited (pure): its own account's limit, priority (QOS), capacity, or placement.

Slurm names the reason a pending job does not start (job_reason_codes): `AssocGrp*` / `QOSGrp*` when
the association's or QOS's aggregate limit (GrpTRES gres/gpu) is reached, `Priority` when jobs of
higher priority go first, `Resources` when the resources are in use. Kueue's equivalents: a workload
that does not fit its ClusterQueue's nominalQuota plus what it may borrow from the cohort
(borrowingLimit, bounded by the lenders' lendingLimit) waits on quota; one that fits its quota but
not the nodes waits on capacity.

Each second a record waited is given one cause; where several hold, the first of Slurm's order of
limits (resource_limits: the job's QOS, then its account, then each ancestor) wins, then the rest:
1. qos_limit: the GPUs its QOS's jobs hold plus the job's exceed the QOS's GrpTRES gres/gpu
   (QOSGrpGRES). A change to the account's limit does not shorten it: the QOS's limit does.
2. limit: the account's running GPUs plus the job's exceed the account's own limit (AssocGrpGRES).
   Only this wait can a bigger limit on the account shorten.
3. parent_limit: an ancestor account's limit, counting its whole subtree, is passed although the
   account's own has room: the same AssocGrpGRES to squeue, but only the parent's limit shortens it
   (`limit_name` names that parent).
4. placement: the cluster had enough free GPUs in total, yet the job did not start: the GPUs were
   not on the nodes the job needs, or a reservation for a job ahead of it held them.
5. priority: the cluster was full, mostly (more than half of the GPUs in use) with jobs of a QOS of
   higher priority, which held enough GPUs that the job would have fit without them (a high-QOS
   training holding the nodes a low-QOS evaluation waits for). A bigger quota cannot shorten this
   wait; a QOS or guaranteed-share change can.
6. capacity: the cluster was full, mostly with work of the same or lower priority (Resources): only
   more GPUs shorten it.

Pending reasons the scheduler recorded (snapshots of `squeue`/slurmrestd: cluster, job_id, ts,
reason) override the derivation for the stretch each snapshot covers (`cause_of_reason`). Without
them the causes are derived from the records, the limits and the cluster's size, and say so; the
record's last pending reason (sacct `Reason`) then still names the limit behind a wait the
derivation saw as placement (free GPUs, yet no start): a QOS limit reason (QOSGrp*, QOSMax*PerUser,
...) makes that stretch the QOS's limit even where the QOS's limit is not in the quota snapshots,
an association limit reason (AssocGrp*) the account's or, where only an ancestor has a limit, the
parent's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import polars as pl

from sla.contention import Timeline

Cause = Literal["limit", "parent_limit", "qos_limit", "placement", "priority", "capacity"]
CAUSES: tuple[Cause, ...] = ("limit", "parent_limit", "qos_limit", "placement", "priority", "capacity")
LIMIT_CAUSES: tuple[Cause, ...] = ("limit", "parent_limit", "qos_limit")

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
        "limit_s": pl.Float64,  # on the account's own limit
        "parent_limit_s": pl.Float64,  # on an ancestor account's limit
        "qos_limit_s": pl.Float64,  # on the QOS's limit
        "placement_s": pl.Float64,
        "priority_s": pl.Float64,
        "capacity_s": pl.Float64,
        "cause": pl.Utf8,  # the cause of most of the wait; null when it did not wait
        "source": pl.Utf8,  # reasons | derived
        "holders": pl.Utf8,  # QOS/team of higher priority holding the most GPUs during its priority wait
        "limit_name": pl.Utf8,  # whose limit held it longest: the QOS, the parent account, or the account
    }
)

# Slurm's job_reason_codes: an association's aggregate or per-account limit, and a QOS's limits (the
# per-account ones on a QOS print as Max*PerAccount).
_ASSOC_REASONS = ("AssocGrp",)
_QOS_REASONS = ("QOSGrp", "QOSMax", "MaxGRESPerAccount", "MaxTRESPerAccount", "MaxGRESPerUser", "MaxTRESPerUser")
_PLACEMENT_REASONS = ("ReqNodeNotAvail", "Reservation", "NodeDown", "BadConstraints")


def cause_of_reason(reason: str | None) -> Cause | None:
    """A Slurm pending reason as a cause; None for reasons that are none of them (BeginTime, Dependency).

    AssocGrp* says only that some association on the job's path is at its limit: the account's own
    (`limit`) here; `wait_causes` tells a parent's apart with the account tree."""
    if not reason:
        return None
    if reason.startswith(_QOS_REASONS):
        return "qos_limit"
    if reason.startswith(_ASSOC_REASONS):
        return "limit"
    if reason == "Priority":
        return "priority"
    if reason == "Resources":
        return "capacity"
    if reason.startswith(_PLACEMENT_REASONS):
        return "placement"
    return None


@dataclass(frozen=True)
class Scheduler:
    """What the derivation knows of one cluster's scheduler: its GPUs, limits, QOS priorities and tree."""

    gpus: int | None
    limits: Mapping[str, int | None]  # account -> GrpTRES gres/gpu (None: unlimited)
    qos_priority: Mapping[str, int]  # QOS -> priority (missing: 0)
    parents: Mapping[str, str | None] = field(default_factory=dict)  # account -> parent account
    qos_limits: Mapping[str, int | None] = field(default_factory=dict)  # QOS -> GrpTRES gres/gpu

    def ancestors(self, account: str) -> list[str]:
        """The account's ancestors, nearest first."""
        found: list[str] = []
        at = self.parents.get(account)
        while at is not None and at not in found and at != account:
            found.append(at)
            at = self.parents.get(at)
        return found


def _qos(key: str) -> str:
    """The QOS of a `qos/team` timeline key."""
    return key.split("/", 1)[0]


def _holder(holders: Timeline, qos_priority: Mapping[str, int], mine: int, piece: slice, weight: np.ndarray) -> str:
    """The `qos/team` of higher priority that held the most GPU-seconds over the weighted pieces."""
    held = {k: float(np.dot(run[piece], weight)) for k, run in holders.running.items()
            if qos_priority.get(_qos(k), 0) > mine}
    held = {k: v for k, v in held.items() if v > 0}
    return min(held, key=lambda k: (-held[k], k)) if held else ""


class _Usage:
    """Per cluster, the running GPUs of each capped ancestor's subtree and of each QOS, built once."""

    def __init__(self, line: Timeline, qline: Timeline, sched: Scheduler | None) -> None:
        self.line, self.qline, self.sched = line, qline, sched
        self.total = line.total_running()
        self._subtree: dict[str, np.ndarray] = {}
        self._qos: dict[str, np.ndarray] = {}

    def subtree(self, account: str) -> np.ndarray:
        if account not in self._subtree:
            assert self.sched is not None
            mine = [run for a, run in self.line.running.items() if a == account or account in self.sched.ancestors(a)]
            self._subtree[account] = sum(mine, self.line.zeros())
        return self._subtree[account]

    def qos(self, name: str) -> np.ndarray:
        if name not in self._qos:
            self._qos[name] = sum((run for k, run in self.qline.running.items() if _qos(k) == name), self.qline.zeros())
        return self._qos[name]


_INDEX = {c: i for i, c in enumerate(CAUSES)}


@dataclass
class _Path:
    """The limits on one job's path: its account's own, its capped ancestors' (nearest first), its QOS's."""

    own: int | None
    parents: list[tuple[str, int]]
    qos: int | None

    @classmethod
    def of(cls, sched: Scheduler | None, account: str, qos: str) -> _Path:
        if sched is None:
            return cls(None, [], None)
        parents = [(a, cap) for a in sched.ancestors(account) if (cap := sched.limits.get(a)) is not None]
        return cls(sched.limits.get(account), parents, sched.qos_limits.get(qos))


def _derive(r: dict[str, Any], use: _Usage, path: _Path, piece: slice) -> tuple[np.ndarray, np.ndarray]:
    """(cause index, holding parent index or -1) per piece of the record's wait, from the timelines."""
    line, qline, sched = use.line, use.qline, use.sched
    gpus = int(r["gpus"])
    n = piece.stop - piece.start
    cause = np.full(n, _INDEX["capacity"])
    running = use.total[piece]
    mine = sched.qos_priority.get(str(r["qos"]), 0) if sched else 0
    higher = sum((run[piece] for q, run in qline.running.items()
                  if sched is not None and sched.qos_priority.get(_qos(q), 0) > mine), np.zeros(n))
    if sched is not None and sched.gpus is not None:
        free = sched.gpus - running
        cause[free >= gpus] = _INDEX["placement"]
        # Full, and mostly with work that ranks above the job's: priority; else capacity.
        cause[(free < gpus) & (free + higher >= gpus) & (2 * higher > running)] = _INDEX["priority"]
    # Slurm's order of limits: the QOS's, the account's, each ancestor's; the first that binds is named.
    holder = np.full(n, -1)
    for k in range(len(path.parents) - 1, -1, -1):
        over = use.subtree(path.parents[k][0])[piece] + gpus > path.parents[k][1]
        cause[over] = _INDEX["parent_limit"]
        holder[over] = k
    if path.own is not None:
        cause[_own(line, r, piece) + gpus > path.own] = _INDEX["limit"]
    if path.qos is not None:
        cause[use.qos(str(r["qos"]))[piece] + gpus > path.qos] = _INDEX["qos_limit"]
    return cause, holder


def _own(line: Timeline, r: dict[str, Any], piece: slice) -> np.ndarray:
    return line.running.get(str(r["account"]), line.zeros())[piece]


def _own_over(line: Timeline, r: dict[str, Any], piece: slice, path: _Path) -> np.ndarray:
    if path.own is None:
        return np.zeros(piece.stop - piece.start, dtype=bool)
    return np.asarray(_own(line, r, piece) + int(r["gpus"]) > path.own)


def _from_reasons(cause: np.ndarray, marks: list[tuple[float, Cause | None]], starts: np.ndarray,
                  own_over: np.ndarray, path: _Path) -> None:
    """The scheduler's pending reasons, each for the stretch its snapshot covers (the first one for
    the wait before it too); AssocGrp* is the parent's limit where the account's own had room."""
    for i, (ts, found) in enumerate(marks):
        if found is None:
            continue
        until = marks[i + 1][0] if i + 1 < len(marks) else np.inf
        stretch = (starts >= ts) & (starts < until) | ((starts < ts) & (i == 0))
        if found == "limit" and path.parents:
            cause[stretch & own_over] = _INDEX["limit"]
            cause[stretch & ~own_over] = _INDEX["parent_limit"]
        else:
            cause[stretch] = _INDEX[found]


def _from_last_reason(cause: np.ndarray, reason: str | None, own_over: np.ndarray, path: _Path) -> None:
    """sacct's last pending reason: a limit held the job where the derivation saw free GPUs; and a QOS
    limit the snapshots do not hold (so nothing derived it) held it for the final stretch of its wait,
    the trailing pieces of one derived cause (Slurm checks limits before resources, so its last word
    says the limit held it then, whatever else was true)."""
    named = cause_of_reason(reason)
    if named not in LIMIT_CAUSES:
        return
    if named == "limit" and path.parents and not own_over.any():
        named = "parent_limit"
    if named == "qos_limit" and path.qos is None and len(cause):
        last = cause[-1]
        if last not in (_INDEX["limit"], _INDEX["parent_limit"]):
            before = np.flatnonzero(cause != last)
            cause[(before[-1] + 1 if len(before) else 0):] = _INDEX[named]
    cause[cause == _INDEX["placement"]] = _INDEX[named]


def _limit_name(by: Mapping[str, float], r: dict[str, Any], path: _Path, cause: np.ndarray, holder: np.ndarray) -> str:
    """Whose limit held the record longest: its QOS, its account, or the parent that held it most."""
    top = max(LIMIT_CAUSES, key=by.__getitem__)
    if by[top] <= 0:
        return ""
    if top == "qos_limit":
        return str(r["qos"])
    if top == "limit" or not path.parents:
        return str(r["account"])
    held = holder[(cause == _INDEX["parent_limit"]) & (holder >= 0)]
    return path.parents[int(np.bincount(held).argmax()) if len(held) else 0][0]


def _main(by: Mapping[str, float]) -> Cause:
    """The cause of most of the wait (the first in CAUSES on a tie)."""
    return max(CAUSES, key=lambda c: by[c])


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
    usage: dict[str, _Usage] = {}
    for r in spans.filter(pl.col("pend_e") > pl.col("pend_s")).iter_rows(named=True):
        cluster = r["cluster"]
        line, qline, sched = accounts.get(cluster), qos.get(cluster), schedulers.get(cluster)
        if line is None or qline is None:
            continue
        use = usage.get(cluster)
        if use is None:  # built once per cluster: its running sums cost a pass over every account's timeline
            use = usage[cluster] = _Usage(line, qline, sched)
        piece = line.pieces(r["pend_s"], r["pend_e"])
        secs = np.diff(np.clip(line.bounds[piece.start:piece.stop + 1], r["pend_s"], r["pend_e"]))
        path = _Path.of(sched, str(r["account"]), str(r["qos"]))
        cause, holder = _derive(r, use, path, piece)
        marks = snapshots.get((cluster, int(r["job_id"])))
        if marks:
            _from_reasons(cause, marks, line.bounds[piece.start:piece.stop], _own_over(line, r, piece, path), path)
        else:
            _from_last_reason(cause, r["reason"], _own_over(line, r, piece, path), path)
        by: dict[str, float] = {c: float(secs[cause == i].sum()) for i, c in enumerate(CAUSES)}
        wait = float(secs.sum())
        holders = ""
        if by["priority"] > 0 and sched is not None:
            mine = sched.qos_priority.get(str(r["qos"]), 0)
            holders = _holder(qline, sched.qos_priority, mine, piece, secs * (cause == _INDEX["priority"]))
        rows.append({
            "cluster": cluster, "job_id": r["job_id"], "account": r["account"], "team": r["team"],
            "queue": f"{cluster}/{r['partition'] or '?'}", "qos": r["qos"], "gpus": int(r["gpus"]), "wait_s": wait,
            **{f"{c}_s": by[c] for c in CAUSES}, "cause": _main(by) if wait > 0 else None,
            "source": "reasons" if marks else "derived", "holders": holders,
            "limit_name": _limit_name(by, r, path, cause, holder),
        })
    return pl.DataFrame(rows, schema=WAIT_CAUSES, orient="row")
