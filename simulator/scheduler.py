"""An event-driven stand-in for slurmctld on one cluster, so queue waits come from contention.

Policy (small, close to Slurm's main and backfill schedulers):
- multifactor priority = QOS weight + partition PriorityJobFactor + age (fleet.py);
- jobs are tried in priority order; one that does not fit reserves the host(s) that free up first
  by the time limits of what runs there; a lower-priority job may use a reserved host only if its
  own time limit ends before the reservation starts (backfill);
- account GrpTRES gres/gpu limits hold a job back with reason AssocGrpGRES;
- a job whose QOS may preempt (high preempts low) requeues the youngest victims on one host;
- a node failure ends every run on the host with NODE_FAIL and drains the host for a while;
- a chained stage is submitted when the previous one ends (at once, or after the user's retry
  gap when it did not end well), as a workflow tool would;
- a pass tests at most `queue_depth` pending jobs, the highest priorities first (Slurm's backfill
  stops at `bf_max_job_test`, 500 by default, and its main scheduler at `default_queue_depth`, 100;
  a pass here starts and reserves as the backfill does, so it takes the backfill's depth). A job
  blocked by a limit counts as tested, as in slurmctld; a job below the depth keeps the reason of
  the last pass that reached it ("None" if none did yet), as squeue shows it.
Job ids are handed out at submission, in submission order, as slurmctld does.
"""

from __future__ import annotations

import heapq
import itertools
from bisect import bisect_left, insort
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, replace

from simulator.fleet import (
    ACCOUNT_GPU_FRACTION,
    AGE_PRIORITY_MAX,
    AGE_PRIORITY_PER_HOUR,
    GPUS_PER_NODE,
    PARTITION_PRIORITY,
    PARTITIONS,
    QOS_PRIORITY,
    Cluster,
)
from simulator.hosts import Hosts
from simulator.jobs import Filler, JobSpec, Run
from simulator.plan import NodeFailure

_END, _FAIL, _UP, _SUBMIT, _REQUEUE, _GRAB, _CANCEL = 0, 1, 2, 3, 4, 5, 6
_CHECKPOINT_S = 1800  # a requeued checkpointing job loses up to this much progress
_CHECKPOINTED = frozenset({"train", "bigrun", "urgent", "finetune", "scavenger"})
_CHAIN_GOES_ON = frozenset({"COMPLETED", "TIMEOUT"})
RESERVE_MIN_PRIORITY = QOS_PRIORITY["high"]
BF_MAX_JOB_TEST = 500  # slurm.conf SchedulerParameters bf_max_job_test, its default


def _capped(spec: JobSpec) -> bool:
    """Counts against the batch partitions' GrpTRES (scavenger work is preempted instead)."""
    return spec.partition not in ("interactive", "infer") and spec.nodelist is None and spec.qos != "low"


def base_priority(spec: JobSpec) -> int:
    return QOS_PRIORITY[spec.qos] + PARTITION_PRIORITY[spec.partition]


def _age(t: int, submit_s: int) -> int:
    return min(AGE_PRIORITY_MAX, AGE_PRIORITY_PER_HOUR * max(0, t - submit_s) // 3600)


# The wait after which the age term is at its maximum (the smallest d with PER_HOUR * d // 3600 >= MAX).
_FULL_AGE_S = -(-AGE_PRIORITY_MAX * 3600 // AGE_PRIORITY_PER_HOUR)


def priority(run: Run, t: int) -> int:
    return base_priority(run.spec) + _age(t, run.submit_s)


def _below_reserve(run: Run, t: int) -> bool:
    """priority(run, t) < RESERVE_MIN_PRIORITY, with the age term computed only where it decides."""
    base = base_priority(run.spec)
    if base >= RESERVE_MIN_PRIORITY:
        return False
    if base + AGE_PRIORITY_MAX < RESERVE_MIN_PRIORITY:
        return True
    return base + _age(t, run.submit_s) < RESERVE_MIN_PRIORITY


class PendingQueue:
    """Pending runs, able to give the first n in priority order without sorting them all.

    The age term grows with time since submission, so among runs of the same QOS and partition
    weights the earlier submission never ranks lower: each such group kept sorted by (submit,
    job id) is already in priority order, and a pass merges the few groups lazily.
    """

    def __init__(self) -> None:
        self._by_id: dict[int, Run] = {}  # by id(run): insertion-ordered, O(1) membership
        self._groups: dict[int, list[tuple[int, int, Run]]] = {}

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, run: Run) -> bool:
        return id(run) in self._by_id

    def values(self) -> Iterable[Run]:
        return self._by_id.values()

    def add(self, run: Run) -> None:
        self._by_id[id(run)] = run
        group = self._groups.setdefault(base_priority(run.spec), [])
        entry = (run.submit_s, run.job_id, run)
        if not group or group[-1][:2] < entry[:2]:
            group.append(entry)
        else:
            insort(group, entry)

    def remove(self, run: Run) -> None:
        del self._by_id[id(run)]
        group = self._groups[base_priority(run.spec)]
        del group[bisect_left(group, (run.submit_s, run.job_id))]

    def first(self, t: int, n: int | None) -> list[Run]:
        """The first `n` (all when None) pending runs by (-priority at t, submit, job id)."""

        # _age inlined: a call per pending job per pass was a sixth of the scheduler's time at 1,250 nodes.
        full_age_since = t - _FULL_AGE_S

        def keyed(base: int, group: list[tuple[int, int, Run]]) -> Iterator[tuple[int, int, int, Run]]:
            oldest = -(base + AGE_PRIORITY_MAX)
            for submit_s, job_id, run in group:
                if submit_s <= full_age_since:
                    yield oldest, submit_s, job_id, run
                else:
                    waited = t - submit_s
                    yield -(base + (AGE_PRIORITY_PER_HOUR * waited // 3600 if waited > 0 else 0)), submit_s, job_id, run

        merged = heapq.merge(*(keyed(b, g) for b, g in self._groups.items() if g))
        return [entry[3] for entry in itertools.islice(merged, n)]


@dataclass(frozen=True)
class PendingSnapshot:
    """What `squeue -t PENDING` would have shown at `at_s`: each pending run, its reason and priority."""

    at_s: int
    jobs: tuple[tuple[Run, str, int], ...]


class Scheduler:
    def __init__(
        self,
        cluster: Cluster,
        until_s: int,
        first_id: int,
        batch_cap: int | None,
        snapshots: tuple[int, int] | None = None,
        *,
        queue_depth: int | None = BF_MAX_JOB_TEST,
    ) -> None:
        self.cluster = cluster
        self.queue_depth = queue_depth  # None: every pending job, each pass
        # (first, every): record the pending jobs at these times, as they stood after the last pass
        self._snap_next, self._snap_every = snapshots if snapshots is not None else (until_s, 1)
        self.snapshots: list[PendingSnapshot] = []
        self.until_s = until_s
        self.hosts = Hosts(len(cluster.hosts))
        self.used: dict[str, int] = {}
        self.limit = {a: cluster.account_limit(a) for a in ACCOUNT_GPU_FRACTION}
        # Partition QOS GrpTRES: the batch-like partitions together leave `headroom` GPUs to notebooks.
        self.batch_cap = batch_cap
        self.batch_held = 0
        self.pending = PendingQueue()
        self.preempting = 0  # pending runs that may preempt: a pass may act even with no GPU free
        self.runs: list[Run] = []
        self._heap: list[tuple[int, int, int, object]] = []
        self._seq = itertools.count()
        self._arrays: dict[int, int] = {}  # array key -> the array's job id
        self._ids = itertools.count(first_id)
        self._part_hosts = {p: cluster.partition_hosts(p) for p in PARTITIONS}
        self._part_set = {p: frozenset(h) for p, h in self._part_hosts.items()}

    def push(self, t: int, kind: int, payload: object) -> None:
        heapq.heappush(self._heap, (t, kind, next(self._seq), payload))

    def run(
        self, specs: Iterable[JobSpec], failures: Iterable[NodeFailure], fillers: Iterable[Filler] = ()
    ) -> list[Run]:
        for spec in specs:
            self.push(spec.submit_s, _SUBMIT, spec)
        for f in failures:
            self.push(f.at_s, _FAIL, f)
        for filler in fillers:
            for t in range(filler.from_s, filler.to_s, filler.every_s):
                self.push(t, _GRAB, filler)
        heap = self._heap
        while heap and heap[0][0] < self.until_s:
            t = heap[0][0]
            self._snapshot_until(t)
            grabs: list[Filler] = []
            while heap and heap[0][0] == t:
                _, kind, _, payload = heapq.heappop(heap)
                if kind == _GRAB:
                    assert isinstance(payload, Filler)
                    grabs.append(payload)
                else:
                    self._handle(t, kind, payload)
            self._pass(t)
            for filler in grabs:
                self._grab(filler, t)
        self._snapshot_until(self.until_s)
        for r in self.pending.values():
            r.priority = priority(r, self.until_s)
        return self.runs

    def _snapshot_until(self, t: int) -> None:
        """Snapshots due before `t`: nothing changes between passes, so they show the last pass's state."""
        while self._snap_next < min(t, self.until_s):
            at = self._snap_next
            jobs = tuple((r, r.reason, priority(r, at)) for r in self.pending.values() if r.submit_s <= at)
            self.snapshots.append(PendingSnapshot(at, jobs))
            self._snap_next += self._snap_every

    def _handle(self, t: int, kind: int, payload: object) -> None:
        if kind == _SUBMIT:
            assert isinstance(payload, JobSpec)
            run = Run(payload, next(self._ids), 0, t, payload.run_s)
            if payload.array is not None:
                # Tasks of one array are submitted together; the array's id is its first task's.
                if payload.array[1] == 0:
                    self._arrays[payload.array[0]] = run.job_id
                run.array_job_id = self._arrays.get(payload.array[0], run.job_id)
            self._enqueue(run)
            if payload.patience_s is not None:
                self.push(t + payload.patience_s, _CANCEL, run)
        elif kind == _CANCEL:
            assert isinstance(payload, Run)
            if payload in self.pending:  # scancel of a job that is still pending
                self.pending.remove(payload)
                if payload.spec.preempts:
                    self.preempting -= 1
                payload.end_s = t
                payload.state = "CANCELLED"
                payload.priority = priority(payload, t)
        elif kind == _REQUEUE:
            assert isinstance(payload, Run)
            self._enqueue(payload)
        elif kind == _END:
            assert isinstance(payload, Run)
            if payload.state == "RUNNING" and payload.planned_end_s == t:
                self._finish(payload, t, payload.spec.final_state)
        elif kind == _FAIL:
            assert isinstance(payload, NodeFailure)
            for victim in list(self.hosts.on_host[payload.host]):
                self._finish(victim, t, "NODE_FAIL")
            self.hosts.set_down(payload.host)
            self.push(t + payload.down_s, _UP, payload.host)
        elif kind == _UP:
            assert isinstance(payload, int)
            self.hosts.set_up(payload)

    def _grab(self, filler: Filler, t: int) -> None:
        """Start one filler job on every GPU still idle after the pass (never queued, never waiting)."""
        spec = filler.template
        n = 0
        for h in self._part_hosts[spec.partition]:
            if h in self.hosts.down:
                continue
            for g in sorted(self.hosts.free[h]):
                left = self.limit[spec.account] - self.used.get(spec.account, 0)
                if left < 1:
                    return
                hold = max(60, filler.hold_until_s - t + 37 * (n % 11))
                n += 1
                job = replace(spec, key=spec.key * 1000 + (t // 60) % 1000 * 8 + n, submit_s=t, run_s=hold)
                run = Run(job, next(self._ids), 0, t, hold)
                self._enqueue(run)
                self._start(run, t, [h * GPUS_PER_NODE + g])

    def _enqueue(self, run: Run) -> None:
        self.runs.append(run)
        self.pending.add(run)
        if run.spec.preempts:
            self.preempting += 1

    def _finish(self, run: Run, t: int, state: str) -> None:
        run.end_s = t
        run.state = state
        self.hosts.give_back(run)
        self.used[run.spec.account] -= run.spec.gpus
        if _capped(run.spec):
            self.batch_held -= run.spec.gpus
        nxt = run.spec.next
        if nxt is not None and state != "PREEMPTED":
            self.push(t if state in _CHAIN_GOES_ON else t + run.spec.retry_gap_s, _SUBMIT, nxt)

    def _start(self, run: Run, t: int, slots: list[int]) -> None:
        run.start_s = t
        run.state = "RUNNING"
        run.priority = priority(run, t)
        run.slots = tuple(sorted(slots))
        run.hosts = tuple(sorted({s // GPUS_PER_NODE for s in slots}))
        self.hosts.take(run, slots)
        self.used[run.spec.account] = self.used.get(run.spec.account, 0) + run.spec.gpus
        if _capped(run.spec):
            self.batch_held += run.spec.gpus
        run.planned_end_s = t + max(1, run.remaining_s)
        self.push(run.planned_end_s, _END, run)
        self.pending.remove(run)
        if run.spec.preempts:
            self.preempting -= 1

    def _preempt(self, victim: Run, t: int) -> None:
        self._finish(victim, t, "PREEMPTED")
        if not victim.spec.requeue:
            return
        assert victim.start_s is not None
        done = t - victim.start_s
        if victim.spec.kind in _CHECKPOINTED:
            lost = min(done, _CHECKPOINT_S * (victim.job_id % 7 + 1) // 7)
            remaining = victim.remaining_s - done + lost
        else:
            remaining = victim.spec.run_s
        self.push(
            t,
            _REQUEUE,
            Run(
                victim.spec, victim.job_id, victim.attempt + 1, t, max(60, remaining), array_job_id=victim.array_job_id
            ),
        )

    def _pass(self, t: int) -> None:
        if not self.pending:
            return
        if not self.hosts.free_up() and not self.preempting:
            return
        PassState(self, t).walk(self.pending.first(t, self.queue_depth))


class PassState:
    """One scheduling pass at time t: jobs in priority order, with the reservations made so far.

    The decisions are those of the plain policy (module docstring); the host buckets only let each
    question skip hosts that cannot qualify, and answers that failed are kept while nothing changed.
    """

    def __init__(self, sched: Scheduler, t: int) -> None:
        self.s = sched
        self.t = t
        # host -> [reserved from, GPUs that will be free then beyond what the reservation needs]
        self.reserved: dict[int, list[int]] = {}
        self.no_victims: set[tuple[int, frozenset[str], str]] = set()
        self.no_victims_at = -1  # hosts.version the failed answers hold for

    def walk(self, order: list[Run]) -> None:
        s, t, reserved = self.s, self.t, self.reserved
        blocked = False
        for run in order:
            spec = run.spec
            if spec.qos != "inference" and s.used.get(spec.account, 0) + spec.gpus > s.limit[spec.account]:
                run.reason = "AssocGrpGRES"
                continue
            if s.batch_cap is not None and _capped(spec) and s.batch_held + spec.gpus > s.batch_cap:
                run.reason = "QOSGrpGRES"
                continue
            ends = t + spec.limit_min * 60
            if spec.nodelist is not None:
                slots = self._pinned(run, ends)
            else:
                slots = self._fit(spec.gpus, s._part_set[spec.partition], ends)
                if slots is None and spec.preempts and spec.gpus <= GPUS_PER_NODE:
                    slots = self._preempt_for(run)
            if slots is not None:
                for h in {x // GPUS_PER_NODE for x in slots}:
                    if h in reserved and ends > reserved[h][0]:
                        reserved[h][1] -= sum(1 for x in slots if x // GPUS_PER_NODE == h)
                s._start(run, t, slots)
                continue
            run.reason = "Priority" if blocked else "Resources"
            if (blocked and spec.nodelist is None) or _below_reserve(run, t):
                continue  # only the top blocked job reserves; low QOS never does (bf_min_prio_reserve)
            blocked = True
            self._reserve(spec)

    def _allowed(self, spec: JobSpec) -> list[int]:
        pinned = spec.nodelist if spec.nodelist is not None else self.s._part_hosts[spec.partition]
        return [h for h in pinned if h not in self.s.hosts.down]

    def _usable(self, h: int, gpus: int, ends: int) -> bool:
        r = self.reserved.get(h)
        return r is None or ends <= r[0] or r[1] >= gpus

    def _fit(self, gpus: int, pinned: frozenset[int], ends: int) -> list[int] | None:
        """Best fit: the usable host with the fewest free GPUs that are enough (then the lowest
        index); 8-GPU multiples take the lowest-index whole usable hosts."""
        hosts = self.s.hosts
        if gpus <= GPUS_PER_NODE:
            for k in range(gpus, GPUS_PER_NODE + 1):
                for h in hosts.bucket[k]:
                    if h in pinned and self._usable(h, gpus, ends):
                        return [h * GPUS_PER_NODE + g for g in sorted(hosts.free[h])[:gpus]]
            return None
        need = gpus // GPUS_PER_NODE
        whole = []
        for h in hosts.bucket[GPUS_PER_NODE]:
            if h in pinned and self._usable(h, gpus, ends):
                whole.append(h)
                if len(whole) == need:
                    return [x * GPUS_PER_NODE + g for x in whole for g in range(GPUS_PER_NODE)]
        return None

    def _pinned(self, run: Run, ends: int) -> list[int] | None:
        """A job pinned to a node list (few hosts, in the list's order): the plain policy."""
        spec, hosts = run.spec, self.s.hosts
        allowed = self._allowed(spec)
        usable = [h for h in allowed if self._usable(h, spec.gpus, ends)]
        slots = None
        if spec.gpus <= GPUS_PER_NODE:
            fitting = [h for h in usable if len(hosts.free[h]) >= spec.gpus]
            if fitting:
                best = min(fitting, key=lambda h: (len(hosts.free[h]), h))
                slots = [best * GPUS_PER_NODE + g for g in sorted(hosts.free[best])[: spec.gpus]]
        else:
            whole = [h for h in usable if len(hosts.free[h]) == GPUS_PER_NODE]
            need = spec.gpus // GPUS_PER_NODE
            if len(whole) >= need:
                slots = [h * GPUS_PER_NODE + g for h in whole[:need] for g in range(GPUS_PER_NODE)]
        if slots is None and spec.preempts and spec.gpus <= GPUS_PER_NODE:
            found = self._victims(run, [h for h in allowed if h not in self.reserved])
            slots = self._take_victims(run, found)
        return slots

    def _victims_cost(self, run: Run, h: int) -> tuple[int, list[Run]] | None:
        hosts = self.s.hosts
        short = run.spec.gpus - len(hosts.free[h])
        if short > hosts.soft_gpus(h, run.spec.preempts):
            return None
        candidates = sorted(
            (r for r in hosts.on_host[h] if r.spec.qos in run.spec.preempts and len(r.hosts) == 1),
            key=lambda r: (-(r.start_s or 0), -r.job_id),
        )
        chosen: list[Run] = []
        for c in candidates:
            if short <= 0:
                break
            chosen.append(c)
            short -= c.spec.gpus
        return sum(c.spec.gpus for c in chosen), chosen

    def _victims(self, run: Run, hosts: list[int]) -> tuple[int, list[Run]] | None:
        best: tuple[int, int, list[Run]] | None = None
        for h in hosts:
            found = self._victims_cost(run, h)
            if found is not None and (best is None or found[0] < best[0]):
                best = (found[0], h, found[1])
        return None if best is None else (best[1], best[2])

    def _preempt_for(self, run: Run) -> list[int] | None:
        """The cheapest host to free by preemption (fewest GPUs preempted, then the lowest index).

        Only called after best fit failed, so every candidate has fewer than `gpus` free and costs
        at least `gpus - free`: hosts are visited by free count, most first, and the walk stops
        once that bound exceeds the best cost found.
        """
        spec, hosts = run.spec, self.s.hosts
        key = (spec.gpus, spec.preempts, spec.partition)
        if self.no_victims_at != hosts.version:
            self.no_victims.clear()
            self.no_victims_at = hosts.version
        if key in self.no_victims:
            return None
        pinned = self.s._part_set[spec.partition]
        best: tuple[int, int, list[Run]] | None = None
        for k in range(spec.gpus - 1, -1, -1):
            if best is not None and spec.gpus - k > best[0]:
                break
            for h in hosts.bucket[k]:
                if h not in pinned or h in self.reserved:
                    continue
                found = self._victims_cost(run, h)
                if found is not None and (best is None or (found[0], h) < (best[0], best[1])):
                    best = (found[0], h, found[1])
        if best is None:
            self.no_victims.add(key)
            return None
        return self._take_victims(run, (best[1], best[2]))

    def _take_victims(self, run: Run, found: tuple[int, list[Run]] | None) -> list[int] | None:
        if found is None:
            return None
        host, victims = found
        for v in victims:
            self.s._preempt(v, self.t)
        return [host * GPUS_PER_NODE + g for g in sorted(self.s.hosts.free[host])[: run.spec.gpus]]

    def _reserve(self, spec: JobSpec) -> None:
        """Reserve the host(s) that free up first by the time limits of what runs there."""
        s, reserved = self.s, self.reserved
        need = min(spec.gpus, GPUS_PER_NODE)
        ranked = heapq.nsmallest(
            max(1, spec.gpus // GPUS_PER_NODE),
            s.hosts.reservations((h for h in self._allowed(spec) if h not in reserved), need, self.t),
        )
        if not ranked:
            return
        at = max(w for w, _, _ in ranked)
        for _, have, h in ranked:
            reserved[h] = [at, have - need]
        s.hosts.version += 1  # failed answers depended on the reservations


def schedule(
    cluster: Cluster,
    specs: list[JobSpec],
    failures: Iterable[NodeFailure],
    *,
    until_s: int,
    first_id: int,
    batch_cap: int | None,
    fillers: Iterable[Filler] = (),
    queue_depth: int | None = BF_MAX_JOB_TEST,
) -> list[Run]:
    """All runs (sacct records) of `specs` up to `until_s`, in the order they were created."""
    return Scheduler(cluster, until_s, first_id, batch_cap, queue_depth=queue_depth).run(specs, failures, fillers)
