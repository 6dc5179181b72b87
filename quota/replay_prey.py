"""The replay's running jobs as preemption sees them (pure): per QOS how many run, whether each QOS
that may preempt has a job to preempt, and per node the GPUs and jobs it could preempt there, kept
up to date at every start and end so a preemption search reads them instead of walking every running
job (quota.replay_model)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping


class Prey:
    def __init__(self, preempts: Mapping[str, frozenset[str]], nodes: int) -> None:
        self.victims = {q: v for q, v in preempts.items() if v}  # preempting QOS -> the QOS it preempts
        self.preyed_by: dict[str, list[str]] = {}  # preempted QOS -> the QOS that preempt it
        for p, prey in self.victims.items():
            for v in prey:
                self.preyed_by.setdefault(v, []).append(p)
        self.running: Counter[str] = Counter()  # running jobs per QOS
        self.able = dict.fromkeys(self.victims, False)  # preempting QOS -> whether a job it may preempt runs
        self.gpus = {p: [0] * nodes for p in self.victims}  # ... -> per node, the GPUs of those jobs
        self.on: list[dict[int, None]] = [{} for _ in range(nodes)]  # per node, its running jobs of a preempted QOS

    def track(self, i: int, q: str, alloc: list[tuple[int, int]], by: int) -> None:
        """Job i of QOS q starts (by 1) or stops (by -1) on `alloc`."""
        running = self.running
        running[q] += by
        preyers = self.preyed_by.get(q)
        if preyers is None:
            return
        for p in preyers:
            freeable = self.gpus[p]
            for n, k in alloc:
                freeable[n] += by * k
        for n, _k in alloc:
            if by > 0:
                self.on[n][i] = None
            else:
                del self.on[n][i]
        if running[q] == (1 if by > 0 else 0):
            for p in preyers:
                self.able[p] = any(running[v] > 0 for v in self.victims[p])
