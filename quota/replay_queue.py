"""The replay's pending jobs (pure), kept per class so a scheduling pass can pass over a whole class at
once (quota.replay_model).

A class is the jobs of one limit path (account and QOS), GPU count and node count: in a pass they
meet the same limits with the same size and need the same share on as many nodes, so when one of
them is held by a limit, or finds no node while no reservation is at stake, every later one of the
class is too until something frees GPUs. The pass merges the heads of the classes still worth trying
in priority order (a heap) instead of visiting every pending job.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

Key = tuple[float, float, float, int]  # (-QOS priority, -priority, submit, job index): priority order


class Queue:
    def __init__(self, chain_of: Sequence[int], gpus: Sequence[int], spans: Sequence[int], chains: int) -> None:
        ids: dict[tuple[int, int, int], int] = {}
        self.cls = [ids.setdefault((c, g, s), len(ids)) for c, g, s in zip(chain_of, gpus, spans, strict=True)]
        self.waiting: list[list[Key]] = [[] for _ in ids]  # per class, its pending jobs in priority order
        self.class_chain = [c for c, _g, _s in ids]
        self.class_gpus = [g for _c, g, _s in ids]
        self.class_spans = [s for _c, _g, s in ids]
        self.class_share = [-(-g // s) for _c, g, s in ids]
        by_chain: list[list[int]] = [[] for _ in range(chains)]
        for (c, _g, _s), k in ids.items():
            by_chain[c].append(k)
        self.chain_classes = [sorted(ks, key=lambda k: self.class_gpus[k]) for ks in by_chain]  # smallest first
        self.chain_pending = [0] * chains
        self.live: set[int] = set()  # limit paths with pending jobs
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def add(self, key: Key) -> None:
        c = self.cls[key[3]]
        bisect.insort(self.waiting[c], key)
        chain = self.class_chain[c]
        self.chain_pending[chain] += 1
        self.live.add(chain)
        self.size += 1

    def remove(self, key: Key) -> None:
        c = self.cls[key[3]]
        waiting = self.waiting[c]
        del waiting[bisect.bisect_left(waiting, key)]
        chain = self.class_chain[c]
        self.chain_pending[chain] -= 1
        if not self.chain_pending[chain]:
            self.live.discard(chain)
        self.size -= 1

    def after(self, c: int, key: Key | None) -> Key | None:
        """Class c's first pending job after `key` in priority order (None: its first one)."""
        waiting = self.waiting[c]
        at = 0 if key is None else bisect.bisect_right(waiting, key)
        return waiting[at] if at < len(waiting) else None

    def in_order(self) -> list[Key]:
        """Every pending job, in priority order."""
        return sorted(k for waiting in self.waiting for k in waiting)
