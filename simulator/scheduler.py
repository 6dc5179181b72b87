"""An event-driven stand-in for slurmctld on one cluster, so queue waits come from contention.

Policy (small, close to Slurm's main and backfill schedulers; the passes are in passes.py):
- multifactor priority = QOS weight + partition PriorityJobFactor + age (fleet.py, priority.py);
- the main scheduler runs after each event (submit, end, cancel, requeue, node failure or return)
  over the first `default_queue_depth` jobs by priority, and every `sched_interval` over the whole
  queue: strict priority order per partition, no reservations;
- the backfill runs every `bf_interval` over the first `bf_max_job_test` jobs: a blocked job of
  QOS high or above reserves the host(s) that free up first by the time limits of what runs there,
  and a lower-priority job may use a reserved host only if its own time limit ends before the
  reservation starts;
- account GrpTRES gres/gpu limits hold a job back with reason AssocGrpGRES;
- a job whose QOS may preempt (high preempts low) requeues the youngest victims on one host;
- a node failure ends every run on the host with NODE_FAIL and drains the host for a while;
- a chained stage is submitted when the previous one ends (at once, or after the user's retry
  gap when it did not end well), as a workflow tool would;
- a job held by a limit counts as tested, as in slurmctld; a job below both depths keeps the
  reason of the last pass that reached it ("None" if none did yet), as squeue shows it.
Job ids are handed out at submission, in submission order, as slurmctld does.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable
from dataclasses import dataclass, replace

from simulator.fleet import ACCOUNT_GPU_FRACTION, GPUS_PER_NODE, PARTITIONS, Cluster
from simulator.hosts import Hosts
from simulator.jobs import Filler, JobSpec, Run
from simulator.passes import BackfillPass, MainPass
from simulator.plan import NodeFailure
from simulator.priority import PendingQueue, capped, priority

_END, _FAIL, _UP, _SUBMIT, _REQUEUE, _GRAB, _CANCEL = 0, 1, 2, 3, 4, 5, 6
_CHECKPOINT_S = 1800  # a requeued checkpointing job loses up to this much progress
_CHECKPOINTED = frozenset({"train", "bigrun", "urgent", "finetune", "scavenger"})
_CHAIN_GOES_ON = frozenset({"COMPLETED", "TIMEOUT"})


@dataclass(frozen=True)
class SchedulerParameters:
    """The slurm.conf SchedulerParameters the simulated slurmctld follows, at Slurm's defaults."""

    default_queue_depth: int | None = 100  # jobs the main scheduler tests per event (None: all)
    sched_interval_s: int | None = 60  # the main scheduler tests the whole queue this often (None: never)
    bf_interval_s: int = 30  # seconds between backfill passes
    bf_max_job_test: int | None = 500  # jobs a backfill pass tests (None: all)


SLURM_DEFAULTS = SchedulerParameters()


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
        params: SchedulerParameters = SLURM_DEFAULTS,
    ) -> None:
        self.cluster = cluster
        self.params = params
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
        heap, params = self._heap, self.params
        bf_every, full_every = params.bf_interval_s, params.sched_interval_s
        last = -1  # the last time a pass could run
        while True:
            # The next event, or the next backfill / full main tick while jobs are pending (with
            # none pending a timer pass has nothing to do, so those ticks are skipped).
            t = heap[0][0] if heap else self.until_s
            if self.pending:
                t = min(t, _next_multiple(last, bf_every), _next_multiple(last, full_every or bf_every))
            if t >= self.until_s:
                break
            last = t
            self._snapshot_until(t)
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
            full = full_every is not None and t % full_every == 0
            if acted or full:
                self._pass(MainPass(self, t), None if full else params.default_queue_depth)
            if t % bf_every == 0:
                self._pass(BackfillPass(self, t), params.bf_max_job_test)
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
        if capped(run.spec):
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
        if capped(run.spec):
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

    def _pass(self, scheduler: MainPass | BackfillPass, depth: int | None) -> None:
        if not self.pending:
            return
        if not self.hosts.free_up() and not self.preempting:
            return
        scheduler.walk(self.pending.first(scheduler.t, depth))


def _next_multiple(after: int, every: int) -> int:
    """The first multiple of `every` after `after`: the timers tick on whole multiples of the clock."""
    return (after // every + 1) * every


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
    return Scheduler(cluster, until_s, first_id, batch_cap, params=params).run(specs, failures, fillers)
