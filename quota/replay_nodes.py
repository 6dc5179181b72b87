"""The replay's nodes (pure): free GPUs per node, kept in (free GPUs, node) order so that a best fit
is a binary search instead of a sort of every node (quota.replay_model)."""

from __future__ import annotations

import bisect
from collections.abc import Mapping, Sequence


class Nodes:
    """Free GPUs of each node, and the nodes ordered by (free GPUs, index): best fit takes the first
    ones at or above the share a job needs, which is the order Slurm's select/cons_tres packs in."""

    def __init__(self, gpus: Sequence[int]) -> None:
        self.free = list(gpus)
        self.order = sorted((g, n) for n, g in enumerate(self.free))

    def change(self, n: int, by: int) -> None:
        """Node n's free GPUs change by `by` (negative: a job takes them)."""
        old = self.free[n]
        order = self.order
        del order[bisect.bisect_left(order, (old, n))]
        self.free[n] = old + by
        bisect.insort(order, (old + by, n))

    def widest(self) -> int:
        """The most free GPUs on one node (0 without nodes)."""
        return self.order[-1][0] if self.order else 0

    def enough(self, need: int) -> int:
        """How many nodes have at least `need` free GPUs."""
        return len(self.order) - bisect.bisect_left(self.order, (need, -1))

    def fit(self, need: int, count: int) -> list[int] | None:
        """Best fit: the `count` nodes with the fewest free GPUs that are at least `need`, ties to the
        lowest index, in index order; None when fewer nodes have that many."""
        order = self.order
        at = bisect.bisect_left(order, (need, -1))
        if len(order) - at < count:
            return None
        return sorted(n for _g, n in order[at:at + count])

    def fit_over(self, need: int, count: int, room: Mapping[int, int]) -> list[int] | None:
        """`fit` where the nodes of `room` have that many GPUs instead of their free ones."""
        if not room:
            return self.fit(need, count)
        order = self.order
        at, end = bisect.bisect_left(order, (need, -1)), len(order)
        extra = sorted((r, n) for n, r in room.items() if r >= need)
        e = 0
        chosen: list[int] = []
        while len(chosen) < count:
            while at < end and order[at][1] in room:
                at += 1
            if at < end and (e >= len(extra) or order[at] < extra[e]):
                chosen.append(order[at][1])
                at += 1
            elif e < len(extra):
                chosen.append(extra[e][1])
                e += 1
            else:
                return None
        return sorted(chosen)
