"""The two scheduling passes of slurmctld on one cluster: the main scheduler and the backfill.

Both walk the pending jobs in priority order and place each best-fit; they differ as Slurm's do
(slurm.conf SchedulerParameters; sched_config.html; slurmctld's job_scheduler.c `_schedule`):
- the main scheduler runs on events (submit, end, node up...) over `default_queue_depth` jobs and,
  every `sched_interval`, over the whole queue. It makes no reservations: once a job of priority
  `bf_min_prio_reserve` or more cannot start, its partition is failed for the rest of the pass and
  the partition's nodes are closed to every later job (in any partition that shares them), so
  lower jobs cannot take what it waits for; the jobs behind it show `Priority`. A job below that
  priority, or pinned to a node list (which closes only its nodes), fails alone;
- the backfill runs every `bf_interval` over `bf_max_job_test` jobs: the highest-priority blocked
  job of QOS high or above reserves the host(s) that free first by the time limits of what runs
  there, and a lower job may use a reserved host only if its own limit ends before the
  reservation or spare GPUs remain.
The host buckets only let each question skip hosts that cannot qualify; the decisions are those
of the plain policy in tests/simulator/reference_scheduler.py.
"""

from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

from simulator.fleet import AGE_PRIORITY_MAX, GPUS_PER_NODE, PARTITION_PRIORITY, QOS_PRIORITY
from simulator.jobs import JobSpec, Run
from simulator.priority import RESERVE_MIN_PRIORITY, age_priority, below_reserve, capped

if TYPE_CHECKING:
    from simulator.scheduler import Scheduler

_NEVER = 1 << 30


class PassState:
    """What both passes share: limits, best fit, preemption, over the hosts still open to the pass."""

    def __init__(self, sched: Scheduler, t: int) -> None:
        self.s = sched
        self.t = t
        # host -> [reserved from, GPUs that will be free then beyond what the reservation needs]
        self.reserved: dict[int, list[int]] = {}
        self.closed: set[int] = set()  # hosts no later job of this pass may use (main scheduler)
        # (gpus, preempts, partition) -> when no host could be freed by preemption: the answer holds
        # while no GPU comes back and no run of a preemptable QOS starts (hosts only get fuller,
        # reservations and closed hosts only take candidates away).
        self.no_victims: dict[tuple[int, frozenset[str], str], tuple[int, int]] = {}

    def held_by_limit(self, run: Run) -> bool:
        s, spec = self.s, run.spec
        if spec.qos != "inference" and s.used.get(spec.account, 0) + spec.gpus > s.limit[spec.account]:
            run.reason = "AssocGrpGRES"
            return True
        if s.batch_cap is not None and capped(spec) and s.batch_held + spec.gpus > s.batch_cap:
            run.reason = "QOSGrpGRES"
            return True
        return False

    def start(self, run: Run, slots: list[int], ends: int) -> None:
        reserved = self.reserved
        for h in {x // GPUS_PER_NODE for x in slots}:
            if h in reserved and ends > reserved[h][0]:
                reserved[h][1] -= sum(1 for x in slots if x // GPUS_PER_NODE == h)
        self.s._start(run, self.t, slots)

    def _allowed(self, spec: JobSpec) -> list[int]:
        pinned = spec.nodelist if spec.nodelist is not None else self.s._part_hosts[spec.partition]
        down, closed = self.s.hosts.down, self.closed
        return [h for h in pinned if h not in down and h not in closed]

    def _usable(self, h: int, gpus: int, ends: int) -> bool:
        if h in self.closed:
            return False
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
        stamp = (hosts.freed, sum(hosts.soft_started.get(q, 0) for q in spec.preempts))
        if self.no_victims.get(key) == stamp:
            return None
        pinned = self.s._part_set[spec.partition]
        reserved, closed = self.reserved, self.closed
        best: tuple[int, int, list[Run]] | None = None
        for k in range(spec.gpus - 1, -1, -1):
            if best is not None and spec.gpus - k > best[0]:
                break
            for h in hosts.bucket[k]:
                if h not in pinned or h in reserved or h in closed:
                    continue
                found = self._victims_cost(run, h)
                if found is not None and (best is None or (found[0], h) < (best[0], best[1])):
                    best = (found[0], h, found[1])
        if best is None:
            self.no_victims[key] = stamp
            return None
        return self._take_victims(run, (best[1], best[2]))

    def _take_victims(self, run: Run, found: tuple[int, list[Run]] | None) -> list[int] | None:
        if found is None:
            return None
        host, victims = found
        for v in victims:
            self.s._preempt(v, self.t)
        return [host * GPUS_PER_NODE + g for g in sorted(self.s.hosts.free[host])[: run.spec.gpus]]


class MainPass(PassState):
    """slurmctld's main scheduler: strict priority order per partition, no reservations."""

    def __init__(self, sched: Scheduler, t: int) -> None:
        super().__init__(sched, t)
        self.failed: set[str] = set()  # partitions failed in this pass
        self._open: dict[str, int] = {}  # partition -> its up hosts still open, while `closed` is unchanged
        # partition -> fewest GPUs best fit found no room for: starts only take GPUs and hosts only
        # close, so any job as large fails too, until a preemption gives GPUs back.
        self._no_fit: dict[str, int] = {}
        self._no_fit_at = sched.hosts.freed

    def walk(self, order: list[Run]) -> None:
        s, t, failed = self.s, self.t, self.failed
        used, limit, cap = s.used, s.limit, s.batch_cap
        hosts, no_fit, part_set = s.hosts, self._no_fit, s._part_set
        for run in order:
            spec = run.spec
            partition = spec.partition
            if partition in failed:
                if run.reason in ("None", "Resources"):  # a limit's reason stays, as slurmctld keeps it
                    run.reason = "Priority"
                continue
            gpus = spec.gpus
            # held_by_limit, inlined: this loop runs for every job of every event's pass.
            if spec.qos != "inference" and used.get(spec.account, 0) + gpus > limit[spec.account]:
                run.reason = "AssocGrpGRES"
                continue
            if cap is not None and s.batch_held + gpus > cap and capped(spec):
                run.reason = "QOSGrpGRES"
                continue
            if (gpus > GPUS_PER_NODE or self.closed or s.hosts.down) and self._open_hosts(partition) < max(
                1, gpus // GPUS_PER_NODE
            ):
                # Too few of the partition's nodes up and open: Resources, and the partition fails
                # whatever the job's priority (slurmctld's "Nodes required for job are DOWN, DRAINED
                # or reserved for jobs in higher priority partitions").
                run.reason = "Resources"
                self._fail(partition)
                continue
            if spec.nodelist is not None:
                slots = self._pinned(run, 0)
            else:
                if self._no_fit_at != hosts.freed:
                    no_fit.clear()
                    self._no_fit_at = hosts.freed
                slots = None
                if gpus < no_fit.get(partition, _NEVER):
                    slots = self._fit(gpus, part_set[partition], 0)
                    if slots is None:
                        no_fit[partition] = gpus
                if slots is None and spec.preempts and gpus <= GPUS_PER_NODE:
                    slots = self._preempt_for(run)
            if slots is not None:
                self.start(run, slots, 0)
                continue
            run.reason = "Resources"
            if spec.nodelist is not None:
                self._close(spec.nodelist)
                continue
            # below_reserve, inlined
            base = QOS_PRIORITY[spec.qos] + PARTITION_PRIORITY[partition]
            if base + AGE_PRIORITY_MAX < RESERVE_MIN_PRIORITY:
                continue
            if base >= RESERVE_MIN_PRIORITY or base + age_priority(t, run.submit_s) >= RESERVE_MIN_PRIORITY:
                self._fail(partition)

    def _open_hosts(self, partition: str) -> int:
        n = self._open.get(partition)
        if n is None:
            n = self._open[partition] = len(self.s._part_set[partition].difference(self.s.hosts.down, self.closed))
        return n

    def _fail(self, partition: str) -> None:
        self.failed.add(partition)
        self._close(self.s._part_hosts[partition])

    def _close(self, hosts: tuple[int, ...]) -> None:
        # Failed fit and preemption answers stay failed: closing hosts only takes candidates away.
        self.closed.update(hosts)
        self._open.clear()


class BackfillPass(PassState):
    """The backfill scheduler's pass: reservations for the top blocked job, lower jobs around them."""

    def walk(self, order: list[Run]) -> None:
        s, t = self.s, self.t
        blocked = False
        for run in order:
            spec = run.spec
            if self.held_by_limit(run):
                continue
            ends = t + spec.limit_min * 60
            if spec.nodelist is not None:
                slots = self._pinned(run, ends)
            else:
                slots = self._fit(spec.gpus, s._part_set[spec.partition], ends)
                if slots is None and spec.preempts and spec.gpus <= GPUS_PER_NODE:
                    slots = self._preempt_for(run)
            if slots is not None:
                self.start(run, slots, ends)
                continue
            run.reason = "Priority" if blocked else "Resources"
            if (blocked and spec.nodelist is None) or below_reserve(run, t):
                continue  # only the top blocked job reserves; low QOS never does (bf_min_prio_reserve)
            blocked = True
            self._reserve(spec)

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
