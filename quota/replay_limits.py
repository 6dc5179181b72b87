"""The replay's limits (pure): each limit path (a job's QOS, its account and each ancestor) as the
numbers of its limits (quota.replay_model turns them into the arrays the compiled loop keeps up to
date at every start and end)."""

from __future__ import annotations

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
