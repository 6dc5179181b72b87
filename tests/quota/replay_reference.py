"""The frozen reference of the replay's scheduler model (test-only): quota/replay_model.py's event loop
as it was on 2026-12-01, before it was restructured for speed (issue 21, item 9).

The fast model in quota/replay_model.py must return exactly the same ReplayResult (segments,
placements, preemptions) as this one for every input: tests/quota/test_replay_reference.py checks it
over generated clusters, jobs, limits and preemption rules, and over the demo month. This file is the
specification of the model's behaviour, kept simple on purpose (one pass over every pending job at
every event); change it only together with docs/quota.md ("The replay") when the model's behaviour is
meant to change, never to make a test pass.
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from quota.replay_model import ClusterModel, ReplayJob, ReplayResult, Segment

INF = math.inf
_PASSES = 4  # passes at one moment: a pass that preempted is followed by one for the requeued victims
Holder = tuple[str, str]  # ("qos" | "account", name)


@dataclass
class _Reservation:
    at: float
    spare: dict[int, int]  # reserved node -> GPUs a job running past `at` may still take there


class _Replay:
    def __init__(self, jobs: Sequence[ReplayJob], model: ClusterModel, limits: Mapping[str, int | None]) -> None:
        self.jobs = jobs
        self.model = model
        self.free = list(model.node_gpus)
        self.total_free = sum(self.free)
        self.index = {name: n for n, name in enumerate(model.node_names)}
        paths: dict[tuple[str, str], list[tuple[Holder, int]]] = {}
        self.shares = [self.share(j) for j in jobs]
        self.chains = [paths.setdefault((j.account, j.qos), self._chain(j, limits)) if (j.account, j.qos) not in paths
                       else paths[(j.account, j.qos)] for j in jobs]
        self.used: Counter[Holder] = Counter()
        self.pending: list[tuple[float, float, float, int]] = []
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
        self.running_qos: Counter[str] = Counter()
        self.pending_qos: Counter[str] = Counter()
        self.preemptors = {q for q, v in model.rules.preempts.items() if v}
        self.held: _Reservation | None = None  # the reservation of the last pass
        self.held_key: tuple[float, float, float, int] | None = None  # ... and the job it is for
        for i, job in enumerate(jobs):
            if job.pinned_start is not None:
                self.queued[i] = job.submit
                self.begin(i, job.pinned_start, self.pinned_nodes(job))
            else:
                heapq.heappush(self.events, (job.submit, 1, i, 0))

    # -- limits ------------------------------------------------------------------------------------

    def _chain(self, job: ReplayJob, limits: Mapping[str, int | None]) -> list[tuple[Holder, int]]:
        """The limits on the job's path, in Slurm's order: its QOS, its account, each ancestor."""
        chain: list[tuple[Holder, int]] = []
        cap = self.model.qos_limits.get(job.qos)
        if cap is not None:
            chain.append((("qos", job.qos), cap))
        at: str | None = job.account
        seen: set[str] = set()
        while at is not None and at not in seen:
            seen.add(at)
            cap = limits[at] if at in limits else self.model.account_limits.get(at)
            if cap is not None:
                chain.append((("account", at), cap))
            at = self.model.parents.get(at)
        return chain

    def within_limits(self, i: int) -> bool:
        size = self.jobs[i].gpus
        return all(self.used[h] + size <= cap for h, cap in self.chains[i])

    # -- nodes -------------------------------------------------------------------------------------

    @staticmethod
    def share(job: ReplayJob) -> int:
        return -(-job.gpus // job.nodes)

    def split(self, job: ReplayJob, nodes: list[int]) -> list[tuple[int, int]]:
        base, extra = divmod(job.gpus, len(nodes))
        return [(n, base + (1 if k < extra else 0)) for k, n in enumerate(nodes)]

    def fit(self, job: ReplayJob, room: Sequence[float]) -> list[int] | None:
        """Best fit: the `nodes` nodes with the fewest free GPUs (room) that are enough, lowest index first."""
        need = self.share(job)
        found = sorted((room[n], n) for n in range(len(room)) if room[n] >= need)
        if len(found) < job.nodes:
            return None
        return sorted(n for _r, n in found[: job.nodes])

    def pinned_nodes(self, job: ReplayJob) -> list[tuple[int, int]]:
        """A job that started before the window: its recorded nodes where known, else best fit (else
        the nodes with the most free GPUs, over their size if need be: it did run there)."""
        named = [self.index[h] for h in job.pinned_hosts if h in self.index]
        if len(named) == job.nodes:
            return self.split(job, sorted(named))
        nodes = self.fit(job, self.free)
        if nodes is None:
            nodes = sorted(sorted(range(len(self.free)), key=lambda n: (-self.free[n], n))[: job.nodes])
        return self.split(job, nodes)

    # -- starting and stopping ---------------------------------------------------------------------

    def begin(self, i: int, t: float, alloc: list[tuple[int, int]]) -> None:
        job = self.jobs[i]
        for n, k in alloc:
            self.free[n] -= k
        self.total_free -= job.gpus
        for h, _cap in self.chains[i]:
            self.used[h] += job.gpus
        self.alloc[i] = alloc
        self.started[i] = t
        self.running_qos[job.qos] += 1
        bisect.insort(self.by_end, (t + job.limit, i))
        self.run_no[i] += 1
        heapq.heappush(self.events, (t + self.left[i], 0, i, self.run_no[i]))

    def stop(self, i: int, t: float) -> None:
        job = self.jobs[i]
        alloc = self.alloc.pop(i)
        for n, k in alloc:
            self.free[n] += k
        self.total_free += job.gpus
        for h, _cap in self.chains[i]:
            self.used[h] -= job.gpus
        start = self.started.pop(i)
        self.running_qos[job.qos] -= 1
        self.by_end.remove((start + job.limit, i))
        self.segments.append((i, self.queued[i], start, t))
        self.placements.append(tuple(alloc))
        self.left[i] = max(0.0, self.left[i] - (t - start))

    def preempt_for(self, i: int, t: float) -> list[tuple[int, int]] | None:
        """Nodes for job i by preempting jobs of a QOS its QOS may preempt: the nodes that cost the
        fewest preempted GPUs, victims youngest first; None when even that does not make room."""
        job, rules = self.jobs[i], self.model.rules
        victims: dict[int, list[int]] = {}
        for j, alloc in self.alloc.items():
            if rules.may_preempt(job.qos, self.jobs[j].qos):
                for n, _k in alloc:
                    victims.setdefault(n, []).append(j)
        need = self.share(job)
        costs = []
        for n, on in victims.items():
            freeable = self.free[n] + sum(k for j in on for m, k in self.alloc[j] if m == n)
            if freeable >= need:
                costs.append((max(0, need - self.free[n]), n))
        for n in range(len(self.free)):
            if n not in victims and self.free[n] >= need:
                costs.append((0, n))
        if len(costs) < job.nodes:
            return None
        chosen = sorted(n for _c, n in sorted(costs)[: job.nodes])
        for n in chosen:
            for j in sorted(victims.get(n, []), key=lambda j: (-self.started.get(j, -INF), -j)):
                if self.free[n] >= need:
                    break
                if j in self.alloc:
                    self.preempt(j, t)
                    self.preemptions.append((j, i, t))
        return self.split(job, chosen)

    def enqueue(self, i: int) -> None:
        bisect.insort(self.pending, (*self.jobs[i].order, i))
        self.pending_qos[self.jobs[i].qos] += 1

    def preempt(self, j: int, t: float) -> None:
        self.stop(j, t)
        if self.model.rules.requeue.get(self.jobs[j].qos, True) and self.left[j] > 0:
            self.queued[j] = t
            self.enqueue(j)
        else:
            self.left[j] = 0.0  # cancelled: its segment ended at t

    # -- the pass ----------------------------------------------------------------------------------

    def reserve(self, i: int, t: float) -> _Reservation | None:
        """Where and when job i can start earliest, by the time limits of the running jobs."""
        job = self.jobs[i]
        need = self.share(job)
        room = list(self.free)
        enough = sum(1 for r in room if r >= need)
        at = t if enough >= job.nodes else None
        for end, j in [] if at is not None else self.by_end:
            for n, k in self.alloc[j]:
                before = room[n]
                room[n] += k
                if before < need <= room[n]:
                    enough += 1
            if enough >= job.nodes:
                at = max(end, t)
                break
        if at is None:
            return None
        nodes = self.fit(job, room)
        if nodes is None:
            return None
        return _Reservation(at, {n: room[n] - k for n, k in self.split(job, nodes)})

    def place(self, i: int, t: float, held: _Reservation | None) -> list[tuple[int, int]] | None:
        job = self.jobs[i]
        if held is None or t + job.limit <= held.at:
            nodes = self.fit(job, self.free)
        else:
            room = [min(f, held.spare[n]) if n in held.spare else f for n, f in enumerate(self.free)]
            nodes = self.fit(job, room)
        if nodes is None:
            return None
        alloc = self.split(job, nodes)
        if held is not None and t + job.limit > held.at:
            for n, k in alloc:
                if n in held.spare:
                    held.spare[n] -= k
        return alloc

    def can_preempt(self, i: int) -> bool:
        return self.qos_can_preempt(self.jobs[i].qos)

    def qos_can_preempt(self, q: str) -> bool:
        return q in self.preemptors and any(self.running_qos[v] > 0 for v in self.model.rules.preempts[q])

    def nobody_can_start(self) -> bool:
        """No free GPU, and no pending job that may preempt a running one."""
        return self.total_free <= 0 and not any(self.pending_qos[q] > 0 and self.qos_can_preempt(q)
                                                for q in self.preemptors)

    def schedule(self, t: float, keys: list[tuple[float, float, float, int]]) -> bool:
        """One pass at time t over `keys` (pending, in priority order); whether it preempted (the
        requeued victims then get a pass of their own). The pass's reservation is kept for the
        arrivals that come before anything ends."""
        if self.nobody_can_start():
            return False
        preempted = False
        failed: dict[tuple[int, int], int] = {}  # (nodes, 1 short / 0 long / -1 by preemption) -> smallest share
        jobs, shares, chains, used, preemptors = self.jobs, self.shares, self.chains, self.used, self.preemptors
        widest = max(self.free, default=0)  # no job whose share is above it fits without preempting
        for key in keys:
            i = key[3]
            job = jobs[i]
            preemptor = job.qos in preemptors and self.can_preempt(i)
            if self.total_free <= 0 and not preemptor:
                if self.nobody_can_start():
                    break
                continue
            size = job.gpus
            if any(used[h] + size > cap for h, cap in chains[i]):
                continue
            share = shares[i]
            alloc = None
            # A job ahead of the reserved one is not bound by its reservation.
            held = self.held if self.held_key is None or key > self.held_key else None
            short = int(held is None or t + job.limit <= held.at)
            if share <= widest and share < failed.get((job.nodes, short), INF):
                alloc = self.place(i, t, held)
                if alloc is None:
                    failed[(job.nodes, short)] = share
            if alloc is None and preemptor and share < failed.get((job.nodes, -1), INF):
                alloc = self.preempt_for(i, t)
                if alloc is None:
                    failed[(job.nodes, -1)] = share
                else:
                    preempted = True
                    failed = {}  # the victims freed GPUs
            if alloc is not None:
                self.pending.remove(key)
                self.pending_qos[job.qos] -= 1
                self.begin(i, t, alloc)
                widest = max(self.free, default=0)
            elif held is None:
                self.held = self.reserve(i, t) or _Reservation(INF, {})
                self.held_key = key
        return preempted

    def run(self) -> ReplayResult:
        while self.events:
            t = self.events[0][0]
            freed = False
            arrived: list[tuple[float, float, float, int]] = []
            while self.events and self.events[0][0] == t:
                _t, kind, i, run_no = heapq.heappop(self.events)
                if kind == 0:
                    if run_no == self.run_no[i] and i in self.alloc:  # else: preempted before this end
                        self.stop(i, t)
                        freed = True
                else:
                    self.enqueue(i)
                    arrived.append((*self.jobs[i].order, i))
            # Nothing freed: what failed before fails again, only the arrivals are new (unless one of
            # them preempted: then the requeued victims need a full pass too).
            if freed or (arrived and not self.nobody_can_start() and self.schedule(t, sorted(arrived))):
                # GPUs came back: a full pass, with a fresh reservation.
                self.held, self.held_key = None, None
                passes, again = 0, True
                while again and self.pending and passes < _PASSES:
                    again = self.schedule(t, list(self.pending))
                    passes += 1
        for *_k, i in self.pending:
            self.segments.append((i, self.queued[i], INF, INF))
            self.placements.append(())
        return ReplayResult(self.segments, self.placements, self.preemptions)


def reference_replay(jobs: Sequence[ReplayJob], model: ClusterModel, limits: Mapping[str, int | None]) -> ReplayResult:
    """Every segment of the cluster's jobs under `limits` (account -> GrpTRES gres/gpu, None: unlimited)."""
    return _Replay(jobs, model, limits).run()
