"""Which limit holds a pending job back, in a Slurm account tree, and sums of limits without double counts.

Slurm checks a job against its account's GrpTRES and every ancestor's, each counting its whole
subtree's running jobs (`AccountingStorageEnforce=limits`). squeue gives the same reason for either
(AssocGrpGRES), so the reason alone does not say whether vision waits on its own limit of 8 or on
research's 10. `binding_limits` works it out from the tree (ACCOUNT_TREE), the subtree usage
(QUOTA_USAGE rows of kind account, as `collectors.slurm` stores them) and the GPUs the job asks
for: the nearest account, the job's own first, whose GPUs in use plus the ask pass its limit.

Pending reasons fall in four kinds: `quota` (AssocGrp*, QOSGrp*, the limits a quota change moves),
`limit` (other per-user or per-job limits: AssocMax*, QOSMax*), `capacity` (Resources, Priority:
the pool is full or others go first) and `other` (Dependency, BeginTime, held jobs...).
"""

from __future__ import annotations

from typing import Any

import polars as pl

from gpusteward import tables

BINDING = tables.schema({
    "cluster": pl.Utf8, "ts": tables.TS, "job_id": pl.Int64, "account": pl.Utf8, "reason": pl.Utf8,
    "wait_kind": pl.Utf8, "gpus_requested": pl.Int32, "bound_by": pl.Utf8, "bound_limit": pl.Int32,
    "bound_in_use": pl.Int32,
})


def wait_kind(reason: str | None) -> str:
    """quota | limit | capacity | other, for a Slurm pending reason."""
    if not reason:
        return "other"
    if reason.startswith(("AssocGrp", "QOSGrp")):
        return "quota"
    if reason.startswith(("AssocMax", "QOSMax")):
        return "limit"
    if reason in ("Resources", "Priority", "ReqNodeNotAvail", "Reservation"):
        return "capacity"
    return "other"


def _latest_tree(tree: pl.DataFrame) -> dict[tuple[str, str], tuple[str | None, int | None]]:
    latest = tree.sort("ts").unique(subset=["cluster", "account"], keep="last")
    return {(c, a): (p, g) for c, a, p, g in latest.select("cluster", "account", "parent", "gpu_limit").rows()}


def binding_limits(pending: pl.DataFrame, tree: pl.DataFrame, usage: pl.DataFrame) -> pl.DataFrame:
    """For each pending job (PENDING_JOBS), its wait kind and the account limit that holds it back, if one does.

    `usage`: QUOTA_USAGE at the pending snapshot's time (subtree counts). A quota wait with no account
    limit passed (a QOS limit, or usage that moved since) leaves `bound_by` null.
    """
    nodes = _latest_tree(tree)
    in_use = {(c, t, n): g for c, t, k, n, g in usage.select("cluster", "ts", "kind", "name", "gpus_in_use").rows()
              if k == "account"}
    rows: list[dict[str, Any]] = []
    for job in pending.rows(named=True):
        kind = wait_kind(job["reason"])
        bound: tuple[str, int, int] | None = None
        if kind == "quota" and job["account"]:
            account: str | None = job["account"]
            seen: set[str] = set()
            while account is not None and account not in seen and bound is None:
                seen.add(account)
                parent, limit = nodes.get((job["cluster"], account), (None, None))
                used = in_use.get((job["cluster"], job["ts"], account), 0) or 0
                if limit is not None and used + (job["gpus_requested"] or 0) > limit:
                    bound = (account, limit, used)
                account = parent
        rows.append({
            "cluster": job["cluster"], "ts": job["ts"], "job_id": job["job_id"], "account": job["account"],
            "reason": job["reason"], "wait_kind": kind, "gpus_requested": job["gpus_requested"],
            "bound_by": bound[0] if bound else None, "bound_limit": bound[1] if bound else None,
            "bound_in_use": bound[2] if bound else None,
        })
    return pl.DataFrame(rows, schema=BINDING, orient="row") if rows else pl.DataFrame(schema=BINDING)


def limit_total(tree: pl.DataFrame) -> dict[str, int]:
    """Per cluster, the GPUs the account limits allow together, a parent and its children counted once.

    An account limited under a limited ancestor adds nothing: the ancestor's limit already caps its
    whole subtree (vision 8 + nlp 5 under research 10 allow 10, not 23). Accounts with no limit of
    their own and no limited ancestor are not counted: the sum is of what limits allow, not of the pool.
    """
    nodes = _latest_tree(tree)
    totals: dict[str, int] = {}
    for (cluster, account), (parent, limit) in nodes.items():
        if limit is None:
            continue
        at, seen, covered = parent, {account}, False
        while at is not None and at not in seen:
            seen.add(at)
            up_parent, up_limit = nodes.get((cluster, at), (None, None))
            if up_limit is not None:
                covered = True
                break
            at = up_parent
        if not covered:
            totals[cluster] = totals.get(cluster, 0) + limit
    return totals
