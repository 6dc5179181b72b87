"""The replay's limits (pure): each limit path (a job's QOS, its account and each ancestor) as the
numbers of its limits, what each limit still allows, and each path's room, kept up to date at every
start and end so a scheduling pass reads a path's room instead of summing it (quota.replay_model)."""

from __future__ import annotations

import math
from collections.abc import Mapping

from quota.replay_types import ClusterModel

Holder = tuple[str, str]  # ("qos" | "account", name)


def limit_path(model: ClusterModel, account: str, qos: str,
               limits: Mapping[str, int | None]) -> list[tuple[Holder, int]]:
    """The limits on a job's path, in Slurm's order: its QOS, its account, each ancestor."""
    chain: list[tuple[Holder, int]] = []
    cap = model.qos_limits.get(qos)
    if cap is not None:
        chain.append((("qos", qos), cap))
    at: str | None = account
    seen: set[str] = set()
    while at is not None and at not in seen:
        seen.add(at)
        cap = limits[at] if at in limits else model.account_limits.get(at)
        if cap is not None:
            chain.append((("account", at), cap))
        at = model.parents.get(at)
    return chain


class Limits:
    def __init__(self, model: ClusterModel, paths: list[tuple[str, str]], limits: Mapping[str, int | None]) -> None:
        holders: dict[Holder, int] = {}
        self.allows: list[int] = []  # per limit: the GPUs it still allows
        self.chains: list[tuple[int, ...]] = []  # per limit path (account, QOS): its limits
        for account, qos in paths:
            path = limit_path(model, account, qos, limits)
            for h, cap in path:
                if h not in holders:
                    holders[h] = len(holders)
                    self.allows.append(cap)
            self.chains.append(tuple(holders[h] for h, _cap in path))
        # The paths a job's start or end changes the room of: those sharing a limit with its own.
        self.touches = [tuple(d for d, other in enumerate(self.chains) if set(other) & set(mine))
                        for mine in self.chains]
        self.room: list[float] = [min([self.allows[h] for h in on], default=math.inf) for on in self.chains]
        """per limit path: the most GPUs one more job on it may take"""

    def hold(self, chain: int, gpus: int) -> None:
        """A job's GPUs count against (gpus > 0) or come back to (gpus < 0) every limit on its path."""
        allows, room, chains = self.allows, self.room, self.chains
        for h in chains[chain]:
            allows[h] -= gpus
        for other in self.touches[chain]:
            on = chains[other]
            room[other] = allows[on[0]] if len(on) == 1 else min([allows[h] for h in on])
