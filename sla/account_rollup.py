"""The Slurm account tree of the month, rolled up: each account's limit, the GPUs its subtree used,
the jobs its subtree had pending, and which limit held them.

Slurm counts a parent's GrpTRES against its whole subtree, so a parent's row includes its children
(research's peak is vision's and nlp's together, as its limit sees them), and a child's job can
wait on its parent's limit although its own has room. `held_by_parent` counts those jobs on the
child's row and names the parent, so the review can say "vision: 1 job held by research's limit"
rather than leave a wait the child's own numbers cannot explain. Inputs are the month's pending
snapshots, account trees and subtree usage (`warehouse.queries.slurm_queue`); the binding limit of
each snapshot comes from `sla.account_limits.binding_limits`.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import polars as pl

from sla.account_limits import binding_limits
from sla.results import ACCOUNT_ROLLUP


def _path(nodes: dict[str, str | None], account: str) -> list[str]:
    """[top, ..., account], leaving out Slurm's `root` (every tree has it; it says nothing)."""
    path: list[str] = []
    at: str | None = account
    while at is not None and at not in path:
        path.append(at)
        at = nodes.get(at)
    return [a for a in reversed(path) if a != "root"]


def account_rollup(pending: pl.DataFrame, tree: pl.DataFrame, usage: pl.DataFrame) -> pl.DataFrame:
    """ACCOUNT_ROLLUP (sla/results.py): one row per account of the latest tree, in tree order."""
    if tree.is_empty():
        return pl.DataFrame(schema=ACCOUNT_ROLLUP)
    latest = tree.sort("ts").unique(subset=["cluster", "account"], keep="last")
    bound = binding_limits(pending, tree, usage)
    rows: list[dict[str, Any]] = []
    for (cluster,), nodes_frame in latest.group_by(["cluster"]):
        nodes = dict(nodes_frame.select("account", "parent").rows())
        limits = dict(nodes_frame.select("account", "gpu_limit").rows())
        paths = {a: _path(nodes, a) for a in nodes}
        used = usage.filter((pl.col("cluster") == cluster) & (pl.col("kind") == "account"))
        peaks = dict(used.group_by("name").agg(pl.col("gpus_in_use").max()).rows())
        jobs = bound.filter(pl.col("cluster") == cluster)
        # Without a queue snapshot in the month (an older tree only) its counts are unknown, not 0.
        seen = used.height > 0 or jobs.height > 0
        for account, path in paths.items():
            if not path:
                continue  # root
            subtree = {a for a, p in paths.items() if p[: len(path)] == path}
            mine = jobs.filter(pl.col("account").is_in(sorted(subtree)))
            own = jobs.filter(pl.col("account") == account)
            ancestors = set(path[:-1])
            by_parent = own.filter(pl.col("bound_by").is_in(sorted(ancestors)))
            holders = Counter(by_parent["bound_by"].to_list())
            rows.append(
                {
                    "cluster": cluster,
                    "account": account,
                    "parent": path[-2] if len(path) > 1 else None,
                    "path": "/".join(path),
                    "depth": len(path) - 1,
                    "gpu_limit": limits.get(account),
                    # a snapshot that saw the account run nothing: 0 GPUs, not "no data"
                    "peak_gpus_in_use": peaks.get(account, 0 if used.height else None),
                    "pending_jobs": mine["job_id"].n_unique() if seen else None,
                    "quota_waits": mine.filter(pl.col("wait_kind") == "quota")["job_id"].n_unique() if seen else None,
                    "held_by_own_limit": jobs.filter(pl.col("bound_by") == account)["job_id"].n_unique()
                    if seen
                    else None,
                    "held_by_parent": by_parent["job_id"].n_unique() if seen else None,
                    "parent_holding": holders.most_common(1)[0][0] if holders else None,
                }
            )
    if not rows:
        return pl.DataFrame(schema=ACCOUNT_ROLLUP)
    return pl.DataFrame(rows, schema=ACCOUNT_ROLLUP, orient="row").sort("cluster", "path")
