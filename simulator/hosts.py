"""The scheduler's view of one cluster's hosts: free GPUs, runs, and indexes that keep a pass cheap.

A pass asks the same few questions for every pending job: which up host with at least g free GPUs
has the fewest (then the lowest index), which hosts could free g GPUs by preempting, when could g
GPUs be free on a host. Answering them by walking every host made a pass O(pending x hosts); the
buckets below (up hosts by free-GPU count, each sorted by index) answer the first two by walking
only hosts that can qualify, and `reservation` remembers its answer until the host changes.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Iterable

from simulator.fleet import GPUS_PER_NODE
from simulator.jobs import Run


def _limit_end(r: Run) -> int:
    return (r.start_s or 0) + r.spec.limit_min * 60


class Hosts:
    def __init__(self, n: int) -> None:
        self.free: list[list[int]] = [list(range(GPUS_PER_NODE)) for _ in range(n)]
        self.on_host: list[list[Run]] = [[] for _ in range(n)]
        self.down: set[int] = set()
        # bucket[k]: up hosts with exactly k free GPUs, ascending (the best-fit tie-break order).
        self.bucket: list[list[int]] = [[] for _ in range(GPUS_PER_NODE + 1)]
        self.bucket[GPUS_PER_NODE] = list(range(n))
        # GPUs held by single-host runs per QOS: what preemption could free on the host.
        self.soft: list[dict[str, int]] = [{} for _ in range(n)]
        self.freed = 0  # bumped when GPUs come back (a run ends, a host comes up): failed fits may fit again
        self.soft_started: dict[str, int] = {}  # single-host runs started per QOS: new preemption victims
        self._host_version = [0] * n
        self._reservations: dict[tuple[int, int], tuple[int, int, bool, int, int]] = {}

    def _moved(self, h: int, before: int) -> None:
        self._host_version[h] += 1
        after = len(self.free[h])
        if h in self.down or before == after:
            return
        old = self.bucket[before]
        del old[bisect_left(old, h)]
        insort(self.bucket[after], h)

    def take(self, run: Run, slots: list[int]) -> None:
        by_host: dict[int, list[int]] = {}
        for s in slots:
            by_host.setdefault(s // GPUS_PER_NODE, []).append(s % GPUS_PER_NODE)
        for h, gpus in by_host.items():
            before = len(self.free[h])
            for g in gpus:
                self.free[h].remove(g)
            self._moved(h, before)
        for h in run.hosts:
            self.on_host[h].append(run)
        if len(run.hosts) == 1:
            soft = self.soft[run.hosts[0]]
            soft[run.spec.qos] = soft.get(run.spec.qos, 0) + run.spec.gpus
            self.soft_started[run.spec.qos] = self.soft_started.get(run.spec.qos, 0) + 1

    def give_back(self, run: Run) -> None:
        for h in run.hosts:
            self.on_host[h].remove(run)
        if len(run.hosts) == 1:
            self.soft[run.hosts[0]][run.spec.qos] -= run.spec.gpus
        before = {h: len(self.free[h]) for h in run.hosts}
        for slot in run.slots:
            self.free[slot // GPUS_PER_NODE].append(slot % GPUS_PER_NODE)
        for h, n in before.items():
            self._moved(h, n)
        self.freed += 1

    def set_down(self, h: int) -> None:
        if h not in self.down:
            old = self.bucket[len(self.free[h])]
            del old[bisect_left(old, h)]
            self.down.add(h)

    def set_up(self, h: int) -> None:
        if h in self.down:
            self.down.discard(h)
            insort(self.bucket[len(self.free[h])], h)
        self.freed += 1

    def free_up(self) -> int:
        """Free GPUs on up hosts."""
        return sum(k * len(b) for k, b in enumerate(self.bucket))

    def soft_gpus(self, h: int, qos: frozenset[str]) -> int:
        soft = self.soft[h]
        return sum(soft.get(q, 0) for q in qos)

    def reservations(self, hosts: Iterable[int], need: int, t: int) -> list[tuple[int, int, int]]:
        """(when, have, host) of `reservation` for each host: the answers kept are read here directly,
        since a pass that reserves asks this of every host of the partition."""
        kept, versions = self._reservations, self._host_version
        out = []
        for h in hosts:
            hit = kept.get((h, need))
            if hit is not None and hit[0] == versions[h] and t < hit[1]:
                out.append((t if hit[2] else hit[3], hit[4], h))
            else:
                out.append((*self.reservation(h, need, t), h))
        return out

    def reservation(self, h: int, need: int, t: int) -> tuple[int, int]:
        """(when, GPUs free then) for `need` GPUs on host h, if every run there lasts to its limit.

        Every run has a limit end; the answer depends on `t` only through the start value of `when`,
        so it is kept per (host, need) until the host changes or `t` passes its earliest limit end.
        """
        key = (h, need)
        hit = self._reservations.get(key)
        if hit is not None and hit[0] == self._host_version[h] and t < hit[1]:
            _, _, at_t, when, have = hit
            return (t if at_t else when), have
        runs = sorted(self.on_host[h], key=_limit_end)
        have = len(self.free[h])
        when = t
        at_t = True
        for r in runs:
            end = _limit_end(r)
            if have >= need and end > when:
                break
            have += sum(1 for s in r.slots if s // GPUS_PER_NODE == h)
            when = max(when, end)
            at_t = False
        first_end = _limit_end(runs[0]) if runs else 2**62
        self._reservations[key] = (self._host_version[h], first_end, at_t, when, have)
        return when, have
