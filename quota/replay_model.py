"""The replay's scheduler model (pure): one cluster's nodes, limits, QOS tiers, preemption and backfill.

What it models, each as Slurm does it (docs/quota.md, "The replay", has the grounding):
- Priority order: QOS priority, then the record's priority, then submit time (priority/multifactor
  weighs the QOS in). Every event (a job ends, arrives or is preempted) starts a pass over the
  pending jobs in that order.
- Limits: a job starts only if it stays within every limit on its path (resource_limits: the job's
  QOS GrpTRES gres/gpu first, then its account's and each ancestor's, each counting the GPUs of its
  whole subtree). A job held by a limit is passed over and reserves nothing, as the backfill
  scheduler skips jobs that a limit holds.
- Nodes: a job of N nodes needs N nodes each with ceil(GPUs / N) free GPUs; it takes the nodes with
  the fewest free GPUs that are enough (best fit), so free GPUs scattered over nodes cannot run a job
  that needs them on one node (fragmentation).
- Backfill (EASY, as sched/backfill with one job reserved): the first job in priority order that fits
  its limits but finds no nodes reserves the nodes where it can start earliest, judged by the time
  limits of what runs there (the scheduler knows limits, not run times). Later jobs may use the
  reserved nodes' GPUs only if their own time limit ends before the reservation begins, or if they
  leave the reservation what it needs.
- Preemption (preempt/qos): a job whose QOS may preempt another's (PreemptionRules) and that finds
  no nodes frees the nodes that cost the fewest GPUs by preempting that QOS's running jobs, youngest
  first. A REQUEUE victim goes back to the queue with the run time it had left (as a job that
  checkpoints resumes: the work a real requeue loses is in the records' run times already); a
  CANCEL victim ends.
Deterministic: every choice breaks ties by node index or job index.

How it is computed: its results are exactly those of the plain model, one pass over every pending
job at every event, frozen in tests/quota/replay_reference.py (the tests compare them). The loop is
compiled (quota.replay_kernel, numba) over arrays this module builds from the jobs and the cluster. A
pass there tries only the jobs that can do something: pending jobs are kept per class (limit path,
GPUs, nodes), and in a pass the jobs of a class meet the same limits and need the same share on as
many nodes, while limits and free GPUs only shrink until a job is preempted; so a class held by a
limit, or one finding no nodes once the pass has made its reservation, is passed over whole. Nodes
are kept in best-fit order, and limits' room and what each preempting QOS could free are kept up to
date at each start and end (docs/performance.md, "Replay").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from quota import replay_kernel
from quota.replay_limits import limit_path
from quota.replay_types import ClusterModel, ReplayJob, ReplayResult, Segment

__all__ = ["ClusterModel", "JobColumns", "ReplayArrays", "ReplayJob", "ReplayResult", "Segment", "replay_columns",
           "run_replay"]


@dataclass(frozen=True)
class ReplayArrays:
    """A replay's segments as columns (what quota.replay turns into frames), in ReplayResult's order."""

    job: np.ndarray  # job index
    queued: np.ndarray
    start: np.ndarray  # inf: never started
    end: np.ndarray
    alloc_at: np.ndarray  # where the segment's (node, GPUs) are in pool_node / pool_gpus
    alloc_len: np.ndarray
    pool_node: np.ndarray
    pool_gpus: np.ndarray
    preemptions: list[tuple[int, int, float]]  # (victim, preemptor, time)

    def result(self) -> ReplayResult:
        nodes, gpus = self.pool_node.tolist(), self.pool_gpus.tolist()
        placements = [tuple(zip(nodes[a:a + n], gpus[a:a + n], strict=True))
                      for a, n in zip(self.alloc_at.tolist(), self.alloc_len.tolist(), strict=True)]
        segments = list(zip(self.job.tolist(), self.queued.tolist(), self.start.tolist(), self.end.tolist(),
                            strict=True))
        return ReplayResult(segments, placements, self.preemptions)


@dataclass(frozen=True)
class JobColumns:
    """The jobs to replay as columns (one row per ReplayJob, same meanings), what the kernel reads."""

    submit: np.ndarray
    work: np.ndarray
    limit: np.ndarray
    gpus: np.ndarray
    nodes: np.ndarray
    account: list[str]
    qos: list[str]
    order: np.ndarray  # (jobs, 3): ReplayJob.order
    pinned_start: np.ndarray  # nan: not pinned
    pinned_hosts: dict[int, tuple[str, ...]]  # pinned job -> its recorded nodes

    @classmethod
    def of(cls, jobs: Sequence[ReplayJob]) -> JobColumns:
        return cls(
            np.array([j.submit for j in jobs], np.float64), np.array([j.work for j in jobs], np.float64),
            np.array([j.limit for j in jobs], np.float64), np.array([j.gpus for j in jobs], np.int64),
            np.array([j.nodes for j in jobs], np.int64), [j.account for j in jobs], [j.qos for j in jobs],
            np.array([j.order for j in jobs], np.float64).reshape(len(jobs), 3),
            np.array([np.nan if j.pinned_start is None else j.pinned_start for j in jobs], np.float64),
            {i: j.pinned_hosts for i, j in enumerate(jobs) if j.pinned_start is not None and j.pinned_hosts},
        )


def _ids(names: Sequence[str]) -> dict[str, int]:
    ids: dict[str, int] = {}
    for name in names:
        ids.setdefault(name, len(ids))
    return ids


def _arrays(jobs: JobColumns, model: ClusterModel,
            limits: Mapping[str, int | None]) -> tuple[tuple[object, ...], tuple[object, ...]]:
    """The kernel's input: the jobs, and the cluster's nodes, limits, classes, QOS and preemption rules,
    as integer ids and arrays."""
    rules = model.rules
    qos_ids = _ids(jobs.qos + sorted(rules.preempts) + sorted(v for p in rules.preempts.values() for v in p))
    victims = np.zeros((len(qos_ids), len(qos_ids)), np.bool_)
    for p, prey in rules.preempts.items():
        for v in prey:
            victims[qos_ids[p], qos_ids[v]] = True
    requeue = np.array([rules.requeue.get(q, True) for q in qos_ids], np.bool_)
    # Limit paths (account, QOS): the limits on each, in Slurm's order.
    paths: dict[tuple[str, str], int] = {}
    chain_of = np.array([paths.setdefault(path, len(paths)) for path in zip(jobs.account, jobs.qos, strict=True)],
                        np.int64)
    holders: dict[tuple[str, str], int] = {}
    caps: list[int] = []
    chains: list[list[int]] = []
    for account, qos in paths:
        chain = []
        for holder, cap in limit_path(model, account, qos, limits):
            if holder not in holders:
                holders[holder] = len(caps)
                caps.append(cap)
            chain.append(holders[holder])
        chains.append(chain)
    width = max([len(c) for c in chains], default=0) or 1
    chain_lim = np.zeros((len(chains), width), np.int64)
    for c, chain in enumerate(chains):
        chain_lim[c, :len(chain)] = chain
    # The paths a job's start or end changes the room of: those sharing a limit with its own.
    touches = [[d for d, other in enumerate(chains) if set(other) & set(mine)] for mine in chains]
    # Classes: jobs of one limit path, GPU count and node count; per path, smallest first.
    n = len(jobs.gpus)
    found, cls = np.unique(np.stack([chain_of, jobs.gpus, jobs.nodes], axis=1).reshape(n, 3), axis=0,
                           return_inverse=True)
    class_chain, class_gpus, class_spans = (found[:, k].astype(np.int64) for k in range(3))
    chain_classes = [sorted(np.flatnonzero(class_chain == c).tolist(), key=lambda k: int(class_gpus[k]))
                     for c in range(len(chains))]
    # Priority order: (order, index), as rank.
    rank = np.empty(n, np.int64)
    rank[np.lexsort((np.arange(n), jobs.order[:, 2], jobs.order[:, 1], jobs.order[:, 0]))] = np.arange(n)
    job_arrays = (jobs.gpus.astype(np.int64), jobs.nodes.astype(np.int64), jobs.limit.astype(np.float64),
                  np.array([qos_ids[q] for q in jobs.qos], np.int64), chain_of, cls.reshape(n).astype(np.int64),
                  rank, jobs.work.astype(np.float64))
    return job_arrays, (
        np.array(model.node_gpus, np.int64), np.array(caps, np.int64), chain_lim,
        np.array([len(c) for c in chains], np.int64), *_flat(touches),
        class_chain, class_gpus, class_spans, *_flat(chain_classes),
        np.array([qos_ids[q] for _a, q in paths], np.int64), victims, requeue,
        int(jobs.nodes.max(initial=1)),
    )


def _flat(lists: list[list[int]]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Lists of ids as (where each starts, its length, all of them in one array)."""
    lengths = np.array([len(x) for x in lists], np.int64)
    at = (np.cumsum(lengths) - lengths).astype(np.int64)
    return at, lengths, np.array([v for x in lists for v in x], np.int64)


def replay_columns(jobs: JobColumns, model: ClusterModel, limits: Mapping[str, int | None]) -> ReplayArrays:
    """`run_replay` of jobs given as columns, its segments as columns."""
    job_arrays, cluster = _arrays(jobs, model, limits)
    index = {name: n for n, name in enumerate(model.node_names)}
    count = len(jobs.gpus)
    named = np.zeros(count + 1, np.int64)
    hosts: list[int] = []
    for i in sorted(jobs.pinned_hosts):
        mine = [index[h] for h in jobs.pinned_hosts[i] if h in index]
        named[i + 1] = len(mine)
        hosts += mine
    pinned = ~np.isnan(jobs.pinned_start)
    cols = replay_kernel.replay(job_arrays, cluster, jobs.submit.astype(np.float64), pinned,
                                np.where(pinned, jobs.pinned_start, 0.0), np.cumsum(named),
                                np.array(hosts, np.int64))
    job, queued, start, end, alloc_at, alloc_len, pool_node, pool_gpus, victim, by, at = cols
    return ReplayArrays(job, queued, start, end, alloc_at, alloc_len, pool_node, pool_gpus,
                        list(zip(victim.tolist(), by.tolist(), at.tolist(), strict=True)))


def run_replay(jobs: Sequence[ReplayJob], model: ClusterModel, limits: Mapping[str, int | None]) -> ReplayResult:
    """Every segment of the cluster's jobs under `limits` (account -> GrpTRES gres/gpu, None: unlimited)."""
    return replay_columns(JobColumns.of(jobs), model, limits).result()


def compile_kernel() -> None:
    """Compile (or load from numba's cache) the replay's loop by replaying one job on one node.

    `./dev test` calls it once while the linters run: in a fresh checkout every process that replays
    first would otherwise compile the loop itself (about a minute of CPU each), and the quick benches
    start several such processes at once."""
    job = ReplayJob(submit=0.0, work=60.0, limit=120.0, gpus=1, nodes=1, account="a", qos="normal",
                    order=(0.0, 0.0, 0.0))
    run_replay([job], ClusterModel((8,)), {"a": None})
