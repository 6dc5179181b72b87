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
job at every event, frozen in tests/quota/replay_reference.py (the tests compare them). A pass here
tries only the jobs that can do something: pending jobs are kept per class (quota.replay_queue), a
class held by a limit or finding no nodes past the reservation is passed over whole, nodes are kept
in best-fit order (quota.replay_nodes), and limits' room and what each preempting QOS could free are
kept up to date at each start and end (docs/performance.md, "Replay").
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from quota.replay_limits import Limits
from quota.replay_nodes import Nodes
from quota.replay_prey import Prey
from quota.replay_queue import Key, Queue
from quota.replay_types import ClusterModel, ReplayJob, ReplayResult, Segment

__all__ = ["ClusterModel", "ReplayJob", "ReplayResult", "Segment", "run_replay"]

INF = math.inf
_PASSES = 4  # passes at one moment: a pass that preempted is followed by one for the requeued victims


@dataclass
class _Reservation:
    at: float
    spare: dict[int, int]  # reserved node -> GPUs a job running past `at` may still take there


class _Pass:
    """What one pass keeps from one job it tries to the next."""

    __slots__ = ("failed", "preempted", "widest")

    def __init__(self, widest: int) -> None:
        self.widest = widest  # the most free GPUs on a node: no job whose share is above it fits without preempting
        self.failed: dict[tuple[int, int], int] = {}
        """(nodes, 1 short / 0 long / -1 by preemption) -> the smallest share that found no nodes"""
        self.preempted = False


_NOTHING, _STARTED, _CHANGED, _STOP = 0, 1, 2, 3  # what trying one job did; _CHANGED: freed GPUs or let a QOS preempt


def _split(gpus: int, nodes: list[int]) -> list[tuple[int, int]]:
    if len(nodes) == 1:
        return [(nodes[0], gpus)]
    base, extra = divmod(gpus, len(nodes))
    return [(n, base + (1 if k < extra else 0)) for k, n in enumerate(nodes)]


class _Replay:
    def __init__(self, jobs: Sequence[ReplayJob], model: ClusterModel, limits: Mapping[str, int | None]) -> None:
        self.model = model
        self.nodes = Nodes(model.node_gpus)
        self.free = self.nodes.free
        self.total_free = sum(self.free)
        self.index = {name: n for n, name in enumerate(model.node_names)}
        self.gpus = [j.gpus for j in jobs]
        self.spans = [j.nodes for j in jobs]
        self.shares = [-(-j.gpus // j.nodes) for j in jobs]
        self.limit = [j.limit for j in jobs]
        self.qos = [j.qos for j in jobs]
        self.keys: list[Key] = [(*j.order, i) for i, j in enumerate(jobs)]
        paths: dict[tuple[str, str], int] = {}
        self.chain_of = [paths.setdefault((j.account, j.qos), len(paths)) for j in jobs]
        self.chain_qos = [q for _a, q in paths]
        self.limits = Limits(model, list(paths), limits)
        self.room = self.limits.room
        self.queue = Queue(self.chain_of, self.gpus, self.spans, len(paths))
        self.requeued: list[int] = []  # victims of this pass: queued from the next pass on
        self.events: list[tuple[float, int, int, int]] = []  # (time, 0 end / 1 arrival, job, run number)
        self.alloc: dict[int, list[tuple[int, int]]] = {}  # running job -> [(node, GPUs)]
        self.started: dict[int, float] = {}
        self.by_end: list[tuple[float, int]] = []  # running jobs by start + time limit
        self.run_no = [0] * len(jobs)
        self.left = [j.work for j in jobs]
        self.queued = [j.submit for j in jobs]
        self.segments: list[Segment] = []
        self.placements: list[tuple[tuple[int, int], ...]] = []
        self.preemptions: list[tuple[int, int, float]] = []
        self.pending_qos: Counter[str] = Counter()
        self.prey = Prey(model.rules.preempts, len(self.free))
        self.victims, self.able, self.running_qos = self.prey.victims, self.prey.able, self.prey.running
        self.held: _Reservation | None = None  # the reservation of the last pass
        self.held_key: Key | None = None  # ... and the job it is for
        for i, job in enumerate(jobs):
            if job.pinned_start is not None:
                self.queued[i] = job.submit
                self.begin(i, job.pinned_start, self.pinned_nodes(job))
            else:
                heapq.heappush(self.events, (job.submit, 1, i, 0))

    # -- nodes -------------------------------------------------------------------------------------

    def pinned_nodes(self, job: ReplayJob) -> list[tuple[int, int]]:
        """A job that started before the window: its recorded nodes where known, else best fit (else
        the nodes with the most free GPUs, over their size if need be: it did run there)."""
        named = [self.index[h] for h in job.pinned_hosts if h in self.index]
        if len(named) == job.nodes:
            return _split(job.gpus, sorted(named))
        nodes = self.nodes.fit(-(-job.gpus // job.nodes), job.nodes)
        if nodes is None:
            nodes = sorted(sorted(range(len(self.free)), key=lambda n: (-self.free[n], n))[: job.nodes])
        return _split(job.gpus, nodes)

    # -- starting and stopping ---------------------------------------------------------------------

    def begin(self, i: int, t: float, alloc: list[tuple[int, int]]) -> None:
        change = self.nodes.change
        for n, k in alloc:
            change(n, -k)
        gpus = self.gpus[i]
        self.total_free -= gpus
        self.limits.hold(self.chain_of[i], gpus)
        self.alloc[i] = alloc
        self.started[i] = t
        self.prey.track(i, self.qos[i], alloc, 1)
        bisect.insort(self.by_end, (t + self.limit[i], i))
        self.run_no[i] += 1
        heapq.heappush(self.events, (t + self.left[i], 0, i, self.run_no[i]))

    def stop(self, i: int, t: float) -> None:
        alloc = self.alloc.pop(i)
        change = self.nodes.change
        for n, k in alloc:
            change(n, k)
        gpus = self.gpus[i]
        self.total_free += gpus
        self.limits.hold(self.chain_of[i], -gpus)
        start = self.started.pop(i)
        self.prey.track(i, self.qos[i], alloc, -1)
        del self.by_end[bisect.bisect_left(self.by_end, (start + self.limit[i], i))]
        self.segments.append((i, self.queued[i], start, t))
        self.placements.append(tuple(alloc))
        self.left[i] = max(0.0, self.left[i] - (t - start))

    def preempt_for(self, i: int, t: float) -> list[tuple[int, int]] | None:
        """Nodes for job i by preempting jobs of a QOS its QOS may preempt: the nodes that cost the
        fewest preempted GPUs, victims youngest first; None when even that does not make room."""
        q, free, qos = self.qos[i], self.free, self.qos
        prey, freeable = self.victims[q], self.prey.gpus[q]
        need, count = self.shares[i], self.spans[i]
        # Per node that can make room: the GPUs it costs (those beyond its free ones).
        costs = sorted([(max(0, need - f), n) for n, f in enumerate(free) if f + freeable[n] >= need])
        if len(costs) < count:
            return None
        chosen = sorted(n for _c, n in costs[:count])
        for n in chosen:
            for j in sorted([j for j in self.prey.on[n] if qos[j] in prey], key=lambda j: (-self.started[j], -j)):
                if free[n] >= need:
                    break
                self.preempt(j, t)
                self.preemptions.append((j, i, t))
        return _split(self.gpus[i], chosen)

    def enqueue(self, i: int) -> None:
        self.queue.add(self.keys[i])
        self.pending_qos[self.qos[i]] += 1

    def preempt(self, j: int, t: float) -> None:
        self.stop(j, t)
        if self.model.rules.requeue.get(self.qos[j], True) and self.left[j] > 0:
            self.queued[j] = t
            self.requeued.append(j)  # pending now, tried from the next pass on
            self.pending_qos[self.qos[j]] += 1
        else:
            self.left[j] = 0.0  # cancelled: its segment ended at t

    # -- the pass ----------------------------------------------------------------------------------

    def reserve(self, i: int, t: float) -> _Reservation | None:
        """Where and when job i can start earliest, by the time limits of the running jobs."""
        need, count, free = self.shares[i], self.spans[i], self.free
        enough = self.nodes.enough(need)
        room: dict[int, int] = {}  # nodes whose GPUs come back before `at`: free by then
        at = t if enough >= count else None
        for end, j in [] if at is not None else self.by_end:
            for n, k in self.alloc[j]:
                before = room.get(n, free[n])
                room[n] = before + k
                if before < need <= before + k:
                    enough += 1
            if enough >= count:
                at = max(end, t)
                break
        if at is None:
            return None
        nodes = self.nodes.fit_over(need, count, room)
        if nodes is None:
            return None
        return _Reservation(at, {n: room.get(n, free[n]) - k for n, k in _split(self.gpus[i], nodes)})

    def place(self, i: int, t: float, held: _Reservation | None) -> list[tuple[int, int]] | None:
        long = held is not None and t + self.limit[i] > held.at
        if held is None or not long:
            nodes = self.nodes.fit(self.shares[i], self.spans[i])
        else:
            free = self.free
            nodes = self.nodes.fit_over(self.shares[i], self.spans[i],
                                        {n: min(free[n], s) for n, s in held.spare.items()})
        if nodes is None:
            return None
        alloc = _split(self.gpus[i], nodes)
        if held is not None and long:
            for n, k in alloc:
                if n in held.spare:
                    held.spare[n] -= k
        return alloc

    def qos_can_preempt(self, q: str) -> bool:
        return self.able.get(q, False)

    def nobody_can_start(self) -> bool:
        """No free GPU, and no pending job that may preempt a running one."""
        return self.total_free <= 0 and not any(self.pending_qos[q] > 0 and self.qos_can_preempt(q)
                                                for q in self.victims)

    def attempt(self, key: Key, t: float, run: _Pass) -> int:
        """Try one pending job, as the pass over every pending job does (the frozen reference:
        tests/quota/replay_reference.py): start it, preempt for it, or reserve for it."""
        i = key[3]
        q = self.qos[i]
        preemptor = self.able.get(q, False)
        if self.total_free <= 0 and not preemptor:
            return _STOP if self.nobody_can_start() else _NOTHING
        if self.gpus[i] > self.room[self.chain_of[i]]:
            return _NOTHING  # a limit on its path holds it
        share, spans = self.shares[i], self.spans[i]
        alloc = None
        # A job ahead of the reserved one is not bound by its reservation.
        held = self.held if self.held_key is None or key > self.held_key else None
        short = int(held is None or t + self.limit[i] <= held.at)
        failed = run.failed
        if share <= run.widest and share < failed.get((spans, short), INF):
            alloc = self.place(i, t, held)
            if alloc is None:
                failed[(spans, short)] = share
        changed = False
        if alloc is None and preemptor and share < failed.get((spans, -1), INF):
            alloc = self.preempt_for(i, t)
            if alloc is None:
                failed[(spans, -1)] = share
            else:
                run.preempted = changed = True
                run.failed = {}  # the victims freed GPUs
        if alloc is not None:
            self.queue.remove(key)
            self.pending_qos[q] -= 1
            self.begin(i, t, alloc)
            run.widest = self.nodes.widest()
            # The first running job of a QOS that others preempt lets them preempt again.
            return _CHANGED if changed or (q in self.prey.preyed_by and self.running_qos[q] == 1) else _STARTED
        if held is None:
            self.held = self.reserve(i, t) or _Reservation(INF, {})
            self.held_key = key
        return _NOTHING

    def schedule(self, t: float, keys: list[Key]) -> bool:
        """One pass at time t over `keys` (pending, in priority order); whether it preempted (the
        requeued victims then get a pass of their own). The pass's reservation is kept for the
        arrivals that come before anything ends."""
        if self.nobody_can_start():
            return False
        run = _Pass(self.nodes.widest())
        for key in keys:
            if self.attempt(key, t, run) == _STOP:
                break
        self.requeue()
        return run.preempted

    def schedule_all(self, t: float) -> bool:
        """`schedule` over every pending job, trying only the jobs whose class may still start, reserve
        or preempt: the heads of those classes, merged in priority order."""
        if self.nobody_can_start():
            return False
        run = _Pass(self.nodes.widest())
        heads = self.heads(None, run)
        queue, last = self.queue, None
        while heads:
            key, c, reserver = heapq.heappop(heads)
            if key == last:
                continue  # a class can be in the heap twice: as one that fits and as the next reserver
            last = key
            # A class not worth trying stays so for the rest of the pass, unless GPUs come back.
            done = self.attempt(key, t, run) if self.worth_trying(c, key, run) else None
            if done == _STOP:
                break
            if done == _CHANGED:
                heads = self.heads(key, run)
            elif reserver:
                if self.held_key is None or self.held_key > key:  # nothing reserved: the next that would
                    heads += self.heads(key, run, reserver_only=True)
                    heapq.heapify(heads)
            elif done is not None:
                later = queue.after(c, key)
                if later is not None:
                    heapq.heappush(heads, (later, c, False))
        self.requeue()
        return run.preempted

    def heads(self, after: Key | None, run: _Pass, *, reserver_only: bool = False) -> list[tuple[Key, int, bool]]:
        """A heap of the first job after `after` of each class whose limits let one more job of it
        start and that fits or may preempt, and of the first job of the other classes within their
        limits (the next reserver: such a job does something only while no reservation is made)."""
        queue, heads, failed, waiting = self.queue, [], run.failed, self.queue.waiting
        class_gpus, class_share, class_spans = queue.class_gpus, queue.class_share, queue.class_spans
        out_of_gpus = self.total_free <= 0
        reserver: tuple[Key, int, bool] | None = None
        enough: dict[int, int] = {}  # share -> nodes with that many GPUs free
        for chain in queue.live:
            preemptor = self.able.get(self.chain_qos[chain], False)
            if out_of_gpus and not preemptor:
                continue
            room = self.room[chain]
            for c in queue.chain_classes[chain]:
                if class_gpus[c] > room:
                    break
                jobs = waiting[c]
                at = 0 if after is None else bisect.bisect_right(jobs, after)
                if at == len(jobs):
                    continue
                key, share, spans = jobs[at], class_share[c], class_spans[c]
                if share not in enough:
                    enough[share] = self.nodes.enough(share)
                # As `fits`, with the free nodes counted once per share.
                if enough[share] >= spans or (preemptor and share < failed.get((spans, -1), INF)):
                    if not reserver_only:
                        heads.append((key, c, False))
                elif reserver is None or key < reserver[0]:
                    reserver = (key, c, True)
        if reserver is not None:
            heads.append(reserver)
        heapq.heapify(heads)
        return heads

    def fits(self, c: int, run: _Pass) -> bool:
        """Whether a job of class c may find nodes now, free or by preempting."""
        queue = self.queue
        share, spans = queue.class_share[c], queue.class_spans[c]
        preemptor = self.qos_can_preempt(self.chain_qos[queue.class_chain[c]])
        return (preemptor and share < run.failed.get((spans, -1), INF)) or self.nodes.enough(share) >= spans

    def worth_trying(self, c: int, key: Key, run: _Pass) -> bool:
        """Whether class c's next job (`key`) may start, reserve or preempt. False only when no later
        job of the class can either until a job is preempted or a QOS may preempt again: limits and
        free GPUs only shrink in a pass until then, and past the reserved job only a job that fits
        (or preempts) does anything."""
        queue = self.queue
        chain = queue.class_chain[c]
        if (self.total_free <= 0 and not self.qos_can_preempt(self.chain_qos[chain])) or \
                queue.class_gpus[c] > self.room[chain]:
            return False
        if self.held_key is None or key <= self.held_key:
            return True  # it would reserve
        return self.fits(c, run)

    def requeue(self) -> None:
        for j in self.requeued:
            self.queue.add(self.keys[j])
        self.requeued.clear()

    def run(self) -> ReplayResult:
        events = self.events
        while events:
            t = events[0][0]
            freed = False
            arrived: list[Key] = []
            while events and events[0][0] == t:
                _t, kind, i, run_no = heapq.heappop(events)
                if kind == 0:
                    if run_no == self.run_no[i] and i in self.alloc:  # else: preempted before this end
                        self.stop(i, t)
                        freed = True
                else:
                    self.enqueue(i)
                    arrived.append(self.keys[i])
            # Nothing freed: what failed before fails again, only the arrivals are new (unless one of
            # them preempted: then the requeued victims need a full pass too).
            if freed or (arrived and not self.nobody_can_start() and self.schedule(t, sorted(arrived))):
                # GPUs came back: a full pass, with a fresh reservation.
                self.held, self.held_key = None, None
                passes, again = 0, True
                while again and self.queue and passes < _PASSES:
                    again = self.schedule_all(t)
                    passes += 1
        for key in self.queue.in_order():
            i = key[3]
            self.segments.append((i, self.queued[i], INF, INF))
            self.placements.append(())
        return ReplayResult(self.segments, self.placements, self.preemptions)


def run_replay(jobs: Sequence[ReplayJob], model: ClusterModel, limits: Mapping[str, int | None]) -> ReplayResult:
    """Every segment of the cluster's jobs under `limits` (account -> GrpTRES gres/gpu, None: unlimited)."""
    return _Replay(jobs, model, limits).run()
