"""The scheduler as it was before its host indexes: one plain walk of every host per question.

Kept only as the reference `test_scheduler_equivalence.py` compares `simulator.scheduler` with, so
the indexes provably leave every decision (and so every output byte) as this policy makes it.
Both of slurmctld's schedulers are written out plainly here: the main scheduler (after each event,
`default_queue_depth` jobs; every `sched_interval`, all; a blocked job of priority
`bf_min_prio_reserve` or more fails its partition and closes the partition's nodes for the rest of
the pass) and the backfill (every `bf_interval`, `bf_max_job_test` jobs, reservations). Every timer
tick is visited, even with nothing pending.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable
from dataclasses import replace

from simulator.fleet import (
    AGE_PRIORITY_MAX,
    AGE_PRIORITY_PER_HOUR,
    GPUS_PER_NODE,
    PARTITION_PRIORITY,
    PARTITIONS,
    QOS_PRIORITY,
    Cluster,
)
from simulator.jobs import Filler, JobSpec, Run
from simulator.plan import NodeFailure
from simulator.scheduler import SLURM_DEFAULTS, SchedulerParameters

_END, _FAIL, _UP, _SUBMIT, _REQUEUE, _GRAB, _CANCEL = 0, 1, 2, 3, 4, 5, 6
_CHECKPOINT_S = 1800  # a requeued checkpointing job loses up to this much progress
_CHECKPOINTED = frozenset({"train", "bigrun", "urgent", "finetune", "scavenger"})
_CHAIN_GOES_ON = frozenset({"COMPLETED", "TIMEOUT"})
RESERVE_MIN_PRIORITY = QOS_PRIORITY["high"]


def _capped(spec: JobSpec) -> bool:
    """Counts against the batch partitions' GrpTRES (scavenger work is preempted instead)."""
    return spec.partition not in ("interactive", "infer") and spec.nodelist is None and spec.qos != "low"


def priority(run: Run, t: int) -> int:
    age = min(AGE_PRIORITY_MAX, AGE_PRIORITY_PER_HOUR * max(0, t - run.submit_s) // 3600)
    return QOS_PRIORITY[run.spec.qos] + PARTITION_PRIORITY[run.spec.partition] + age


class Scheduler:
    def __init__(
        self, cluster: Cluster, until_s: int, first_id: int, batch_cap: int | None, params: SchedulerParameters
    ) -> None:
        self.cluster = cluster
        self.params = params
        self.until_s = until_s
        n = len(cluster.hosts)
        self.free: list[list[int]] = [list(range(GPUS_PER_NODE)) for _ in range(n)]
        self.on_host: list[list[Run]] = [[] for _ in range(n)]
        self.down: set[int] = set()
        self.used: dict[str, int] = {}
        # Partition QOS GrpTRES: the batch-like partitions together leave `headroom` GPUs to notebooks.
        self.batch_cap = batch_cap
        self.batch_held = 0
        self.pending: list[Run] = []
        self.runs: list[Run] = []
        self._heap: list[tuple[int, int, int, object]] = []
        self._seq = itertools.count()
        self._arrays: dict[int, int] = {}  # array key -> the array's job id
        self._ids = itertools.count(first_id)
        self._partitions = {p: cluster.partition_hosts(p) for p in PARTITIONS}

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
        heap, p = self._heap, self.params
        if not heap:
            return self.runs
        ticks = [p.bf_interval_s] + ([p.sched_interval_s] if p.sched_interval_s is not None else [])
        t = heap[0][0]
        while t < self.until_s:
            grabs: list[Filler] = []
            acted = False
            while heap and heap[0][0] == t:
                _, kind, _, payload = heapq.heappop(heap)
                if kind == _GRAB:
                    assert isinstance(payload, Filler)
                    grabs.append(payload)
                else:
                    self._handle(t, kind, payload)
                    acted = True
            full = p.sched_interval_s is not None and t % p.sched_interval_s == 0
            if acted or full:
                self._main_pass(t, None if full else p.default_queue_depth)
            if t % p.bf_interval_s == 0:
                self._backfill_pass(t, p.bf_max_job_test)
            for filler in grabs:
                self._grab(filler, t)
            t = min(([heap[0][0]] if heap else [self.until_s]) + [(t // every + 1) * every for every in ticks])
        for r in self.pending:
            r.priority = priority(r, self.until_s)
        return self.runs

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
            if any(r is payload for r in self.pending):  # scancel of a job that is still pending
                self.pending.remove(payload)
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
            for victim in list(self.on_host[payload.host]):
                self._finish(victim, t, "NODE_FAIL")
            self.down.add(payload.host)
            self.push(t + payload.down_s, _UP, payload.host)
        elif kind == _UP:
            assert isinstance(payload, int)
            self.down.discard(payload)

    def _grab(self, filler: Filler, t: int) -> None:
        """Start one filler job on every GPU still idle after the pass (never queued, never waiting)."""
        spec = filler.template
        n = 0
        for h in self._partitions[spec.partition]:
            if h in self.down:
                continue
            for g in sorted(self.free[h]):
                left = self.cluster.account_limit(spec.account) - self.used.get(spec.account, 0)
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
        self.pending.append(run)

    def _finish(self, run: Run, t: int, state: str) -> None:
        run.end_s = t
        run.state = state
        for h in run.hosts:
            self.on_host[h].remove(run)
        for slot in run.slots:
            self.free[slot // GPUS_PER_NODE].append(slot % GPUS_PER_NODE)
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
        for s in slots:
            self.free[s // GPUS_PER_NODE].remove(s % GPUS_PER_NODE)
        for h in run.hosts:
            self.on_host[h].append(run)
        self.used[run.spec.account] = self.used.get(run.spec.account, 0) + run.spec.gpus
        if _capped(run.spec):
            self.batch_held += run.spec.gpus
        run.planned_end_s = t + max(1, run.remaining_s)
        self.push(run.planned_end_s, _END, run)
        self.pending.remove(run)

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

    def _fit(self, gpus: int, hosts: list[int]) -> list[int] | None:
        if gpus <= GPUS_PER_NODE:
            fitting = [h for h in hosts if len(self.free[h]) >= gpus]
            if not fitting:
                return None
            best = min(fitting, key=lambda h: (len(self.free[h]), h))
            return [best * GPUS_PER_NODE + g for g in sorted(self.free[best])[:gpus]]
        whole = [h for h in hosts if len(self.free[h]) == GPUS_PER_NODE]
        need = gpus // GPUS_PER_NODE
        if len(whole) < need:
            return None
        return [h * GPUS_PER_NODE + g for h in whole[:need] for g in range(GPUS_PER_NODE)]

    def _victims(self, run: Run, hosts: list[int]) -> tuple[int, list[Run]] | None:
        best: tuple[int, int, list[Run]] | None = None
        for h in hosts:
            short = run.spec.gpus - len(self.free[h])
            candidates = sorted(
                (r for r in self.on_host[h] if r.spec.qos in run.spec.preempts and len(r.hosts) == 1),
                key=lambda r: (-(r.start_s or 0), -r.job_id),
            )
            chosen: list[Run] = []
            for c in candidates:
                if short <= 0:
                    break
                chosen.append(c)
                short -= c.spec.gpus
            if short > 0:
                continue
            cost = sum(c.spec.gpus for c in chosen)
            if best is None or cost < best[0]:
                best = (cost, h, chosen)
        return None if best is None else (best[1], best[2])

    def _reservation(self, h: int, need: int, t: int) -> tuple[int, int]:
        """(when, GPUs free then) for `need` GPUs on host h, if every run there lasts to its limit."""
        have = len(self.free[h])
        when = t
        for r in sorted(self.on_host[h], key=lambda r: (r.start_s or 0) + r.spec.limit_min * 60):
            end = (r.start_s or 0) + r.spec.limit_min * 60
            if have >= need and end > when:
                break
            have += sum(1 for s in r.slots if s // GPUS_PER_NODE == h)
            when = max(when, end)
        return when, have

    def _can_act(self) -> bool:
        if not self.pending:
            return False
        return any(self.free[h] for h in range(len(self.free)) if h not in self.down) or any(
            r.spec.preempts for r in self.pending
        )

    def _order(self, t: int, depth: int | None) -> list[Run]:
        return sorted(self.pending, key=lambda r: (-priority(r, t), r.submit_s, r.job_id))[:depth]

    def _held(self, run: Run) -> bool:
        spec = run.spec
        if spec.qos != "inference" and self.used.get(spec.account, 0) + spec.gpus > self.cluster.account_limit(
            spec.account
        ):
            run.reason = "AssocGrpGRES"
            return True
        if self.batch_cap is not None and _capped(spec) and self.batch_held + spec.gpus > self.batch_cap:
            run.reason = "QOSGrpGRES"
            return True
        return False

    def _place(self, run: Run, t: int, usable: list[int], allowed: list[int], closed: set[int]) -> list[int] | None:
        """Best fit on `usable`, else (a preempting QOS) the cheapest host of `allowed` not in `closed`."""
        spec = run.spec
        slots = self._fit(spec.gpus, usable) if usable else None
        if slots is None and spec.preempts and spec.gpus <= GPUS_PER_NODE:
            found = self._victims(run, [h for h in allowed if h not in closed])
            if found is not None:
                host, victims = found
                for v in victims:
                    self._preempt(v, t)
                slots = [host * GPUS_PER_NODE + g for g in sorted(self.free[host])[: spec.gpus]]
        return slots

    def _main_pass(self, t: int, depth: int | None) -> None:
        """slurmctld's main scheduler: no reservations; a blocked job of priority bf_min_prio_reserve
        or more fails its partition and closes the partition's nodes to every later job."""
        if not self._can_act():
            return
        closed: set[int] = set()
        failed: set[str] = set()
        for run in self._order(t, depth):
            spec = run.spec
            if spec.partition in failed:
                if run.reason in ("None", "Resources"):
                    run.reason = "Priority"
                continue
            if self._held(run):
                continue
            partition = self._partitions[spec.partition]
            open_hosts = [h for h in partition if h not in self.down and h not in closed]
            if len(open_hosts) < max(1, spec.gpus // GPUS_PER_NODE):
                run.reason = "Resources"
                failed.add(spec.partition)
                closed |= set(partition)
                continue
            pinned = spec.nodelist if spec.nodelist is not None else partition
            allowed = [h for h in pinned if h not in self.down and h not in closed]
            slots = self._place(run, t, allowed, allowed, closed)
            if slots is not None:
                self._start(run, t, slots)
                continue
            run.reason = "Resources"
            if spec.nodelist is not None:
                closed |= set(spec.nodelist)
            elif priority(run, t) >= RESERVE_MIN_PRIORITY:
                failed.add(spec.partition)
                closed |= set(partition)

    def _backfill_pass(self, t: int, depth: int | None) -> None:
        """The backfill: the top blocked job of QOS high or above reserves, lower jobs fit around it."""
        if not self._can_act():
            return
        # host -> [reserved from, GPUs that will be free then beyond what the reservation needs]
        reserved: dict[int, list[int]] = {}
        blocked = False
        for run in self._order(t, depth):
            spec = run.spec
            if self._held(run):
                continue
            pinned = spec.nodelist if spec.nodelist is not None else self._partitions[spec.partition]
            allowed = [h for h in pinned if h not in self.down]
            ends = t + spec.limit_min * 60
            usable = [h for h in allowed if h not in reserved or ends <= reserved[h][0] or reserved[h][1] >= spec.gpus]
            slots = self._place(run, t, usable, allowed, set(reserved))
            if slots is not None:
                for h in {s // GPUS_PER_NODE for s in slots}:
                    if h in reserved and ends > reserved[h][0]:
                        reserved[h][1] -= sum(1 for s in slots if s // GPUS_PER_NODE == h)
                self._start(run, t, slots)
                continue
            run.reason = "Priority" if blocked else "Resources"
            if (blocked and spec.nodelist is None) or priority(run, t) < RESERVE_MIN_PRIORITY:
                continue  # only the top blocked job reserves; low QOS never does (bf_min_prio_reserve)
            blocked = True
            open_hosts = [h for h in allowed if h not in reserved]
            if not open_hosts:
                continue
            need = min(spec.gpus, GPUS_PER_NODE)
            ranked = sorted((*self._reservation(h, need, t), h) for h in open_hosts)
            chosen = ranked[: max(1, spec.gpus // GPUS_PER_NODE)]
            at = max(w for w, _, _ in chosen)
            for _, have, h in chosen:
                reserved[h] = [at, have - need]


def schedule(
    cluster: Cluster,
    specs: list[JobSpec],
    failures: Iterable[NodeFailure],
    *,
    until_s: int,
    first_id: int,
    batch_cap: int | None,
    fillers: Iterable[Filler] = (),
    params: SchedulerParameters = SLURM_DEFAULTS,
) -> list[Run]:
    """All runs (sacct records) of `specs` up to `until_s`, in the order they were created."""
    return Scheduler(cluster, until_s, first_id, batch_cap, params).run(specs, failures, fillers)
