"""Which QOS may preempt which, and how, as the month's records show it (pure).

Slurm's preempt/qos lets a QOS preempt the QOS named in its `Preempt` list; the preempted QOS's
`PreemptMode` says what happens to the victim: REQUEUE puts it back in the queue (sacct --duplicates
then shows a later record of the same job id), CANCEL ends it. The quota snapshots carry neither list,
so the replay reads them from the records: a record that ended PREEMPTED, and the job of another QOS
that started on one of its nodes around that moment (`sla.ledger.gainers`, the same pairing the
preemption ledger uses), say that the gainer's QOS preempts the victim's. A victim QOS is REQUEUE when
any of its preempted records was followed by a later record of the same job, else CANCEL. A pair the
month never showed is not assumed: a QOS that preempted nothing this month preempts nothing in the
replay.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import polars as pl

from sla.common import base_state
from sla.ledger import gainers


@dataclass(frozen=True)
class PreemptionRules:
    """One cluster's preemption: QOS -> the QOS it may preempt, and each victim QOS's mode."""

    preempts: Mapping[str, frozenset[str]] = field(default_factory=dict)
    requeue: Mapping[str, bool] = field(default_factory=dict)  # victim QOS -> REQUEUE (True) or CANCEL (False)

    def may_preempt(self, preemptor: str, victim: str) -> bool:
        return victim in self.preempts.get(preemptor, frozenset())

    def describe(self) -> list[str]:
        """`high > low (REQUEUE)` lines, sorted: what the replay assumed, for its evidence."""
        return [f"{p} > {v} ({'REQUEUE' if self.requeue.get(v, True) else 'CANCEL'})"
                for p in sorted(self.preempts) for v in sorted(self.preempts[p])]


def preemption_rules(
    jobs: pl.DataFrame, qos_priority: Mapping[tuple[str, str], int] | None = None
) -> dict[str, PreemptionRules]:
    """PreemptionRules per cluster from classified job records (JOBS plus team and scenario); with
    qos_priority ((cluster, QOS) -> priority), a pairing where the gainer's QOS does not rank above the
    victim's is taken for a job that merely started on GPUs the victim left, not for a preemption."""
    needed = {"state", "nodes", "qos", "end_time", "start_time", "team", "scenario"}
    if jobs.is_empty() or not needed <= set(jobs.columns):
        return {}
    jobs = jobs.with_columns(base_state().alias("_state"))
    preempted = jobs.filter((pl.col("_state") == "PREEMPTED") & pl.col("end_time").is_not_null())
    if preempted.is_empty():
        return {}
    pairs = gainers(preempted, jobs).join(
        preempted.select("cluster", "job_id", "end_time", pl.col("qos").alias("victim")),
        on=["cluster", "job_id", "end_time"], how="inner",
    ).filter(pl.col("_qos").is_not_null() & pl.col("victim").is_not_null() & (pl.col("_qos") != pl.col("victim")))
    later = jobs.select("cluster", "job_id", pl.col("submit_time").alias("_next"))
    followed = preempted.join(later, on=["cluster", "job_id"], how="inner").filter(
        pl.col("_next") >= pl.col("end_time")
    ).select("cluster", "job_id", "end_time").unique()
    requeued = {(c, q) for c, q in preempted.join(followed, on=["cluster", "job_id", "end_time"], how="inner")
                .select("cluster", "qos").unique().iter_rows() if q is not None}
    out: dict[str, dict[str, set[str]]] = {}
    for cluster, preemptor, victim in pairs.select("cluster", "_qos", "victim").unique().iter_rows():
        if qos_priority is not None and qos_priority.get((cluster, preemptor), 0) <= qos_priority.get(
                (cluster, victim), 0):
            continue
        out.setdefault(cluster, {}).setdefault(preemptor, set()).add(victim)
    return {
        c: PreemptionRules({p: frozenset(v) for p, v in found.items()},
                           {v: (c, v) in requeued for vs in found.values() for v in vs})
        for c, found in out.items()
    }
