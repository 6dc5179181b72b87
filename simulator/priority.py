"""Multifactor priority and the pending queue both Slurm schedulers walk in priority order."""

from __future__ import annotations

import heapq
import itertools
from bisect import bisect_left, insort
from collections.abc import Iterable, Iterator

from simulator.fleet import AGE_PRIORITY_MAX, AGE_PRIORITY_PER_HOUR, PARTITION_PRIORITY, QOS_PRIORITY
from simulator.jobs import JobSpec, Run

# bf_min_prio_reserve: below this priority a blocked job reserves nothing and, in the main
# scheduler, leaves its partition open to the jobs behind it (QOS high and above reach it).
RESERVE_MIN_PRIORITY = QOS_PRIORITY["high"]


def capped(spec: JobSpec) -> bool:
    """Counts against the batch partitions' GrpTRES (scavenger work is preempted instead)."""
    return spec.partition not in ("interactive", "infer") and spec.nodelist is None and spec.qos != "low"


def base_priority(spec: JobSpec) -> int:
    return QOS_PRIORITY[spec.qos] + PARTITION_PRIORITY[spec.partition]


def age_priority(t: int, submit_s: int) -> int:
    return min(AGE_PRIORITY_MAX, AGE_PRIORITY_PER_HOUR * max(0, t - submit_s) // 3600)


# The wait after which the age term is at its maximum (the smallest d with PER_HOUR * d // 3600 >= MAX).
_FULL_AGE_S = -(-AGE_PRIORITY_MAX * 3600 // AGE_PRIORITY_PER_HOUR)


def priority(run: Run, t: int) -> int:
    return base_priority(run.spec) + age_priority(t, run.submit_s)


def below_reserve(run: Run, t: int) -> bool:
    """priority(run, t) < RESERVE_MIN_PRIORITY, with the age term computed only where it decides."""
    base = base_priority(run.spec)
    if base >= RESERVE_MIN_PRIORITY:
        return False
    if base + AGE_PRIORITY_MAX < RESERVE_MIN_PRIORITY:
        return True
    return base + age_priority(t, run.submit_s) < RESERVE_MIN_PRIORITY


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

        # age_priority inlined: a call per pending job per pass was a sixth of the scheduler's time at 1,250 nodes.
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
