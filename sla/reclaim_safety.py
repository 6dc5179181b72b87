"""What keeps reclaiming safe: exemptions, the warning-then-grace stages, the per-hour cap, the kill switch.

- An exemption the data cannot check is not assumed away: a policy that exempts labels or
  reservations leaves alone every job whose record does not carry them (`exemption_unknown`).
- Stages: a candidate not yet warned is warned now and acted on after `grace` (at once when grace
  is 0s); a warned one waits out its grace (`grace`), then is acted on (`act`). A notify policy's
  action is the warning itself (`warn`, then `warned`).
- The cap: in each cluster at most `max_actions_per_hour` taking actions in any hour, counting those
  already taken in the last hour; the candidates wasting the most GPU-time go first, the rest are
  `capped` (reported, not acted on).
- The kill switch (`reclaim.paused`) turns every candidate into `paused`: shown, never acted on.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from fnmatch import fnmatchcase
from typing import Any

import polars as pl

from gpusteward.config.reclaim import TAKING_ACTIONS, ReclaimPolicy
from gpusteward.config.schema import Config

HOUR = timedelta(hours=1)


def _any(patterns: list[str], value: Any) -> bool:
    return value is not None and any(fnmatchcase(str(value), p) for p in patterns)


def _labels(value: Any) -> Mapping[str, Any]:
    if isinstance(value, Mapping):
        return value
    if isinstance(value, list):  # a polars Map column reads as a list of {key, value}
        return {str(item["key"]): item["value"] for item in value if isinstance(item, Mapping)}
    return {}


def exemption(policy: ReclaimPolicy, job: Mapping[str, Any]) -> str | None:
    """The reason `job` (a running JOBS row) is exempt from `policy`, or None."""
    ex = policy.exempt
    simple = (("accounts", "account", "exempt_account"), ("qos", "qos", "exempt_qos"),
              ("users", "user", "exempt_user"), ("job_names", "name", "exempt_name"))
    for setting, column, reason in simple:
        if _any(getattr(ex, setting), job.get(column)):
            return reason
    if ex.labels:
        if "labels" not in job:
            return "exemption_unknown"
        labels = _labels(job["labels"])
        if any(k in labels and fnmatchcase(str(labels[k]), v) for k, v in ex.labels.items()):
            return "exempt_label"
    if ex.reservations:
        if "reservation" not in job:
            return "exemption_unknown"
        if _any(ex.reservations, job["reservation"]):
            return "exempt_reservation"
    return None


def stage(
    policy: ReclaimPolicy, idle_since: datetime, now: datetime, warned_at: datetime | None
) -> tuple[str, datetime, datetime]:
    """(stage, warning due at, action due at) of a candidate."""
    warn_at = idle_since + policy.idle_for
    if policy.action == "notify":
        return ("warn", warn_at, now) if warned_at is None else ("warned", warn_at, warned_at)
    if warned_at is None:
        return ("act" if policy.grace <= timedelta(0) else "warn", warn_at, now + policy.grace)
    due = warned_at + policy.grace
    return ("act" if now >= due else "grace", warn_at, due)


def apply_safety(plan: pl.DataFrame, config: Config, now: datetime, recent_actions: pl.DataFrame) -> pl.DataFrame:
    """The plan with the per-hour cap and the kill switch applied to its candidates."""
    if config.reclaim.paused:
        return plan.with_columns(
            pl.when(pl.col("verdict") == "candidate").then(pl.lit("paused")).otherwise("verdict").alias("verdict")
        )
    taken = recent_actions.filter((pl.col("at") > now - HOUR) & (pl.col("at") <= now)).group_by("cluster").len()
    already = dict(zip(taken["cluster"].to_list(), taken["len"].to_list(), strict=True))
    acting = (
        (pl.col("verdict") == "candidate") & (pl.col("stage") == "act") & pl.col("action").is_in(list(TAKING_ACTIONS))
    )
    ranked = plan.with_row_index("_row").with_columns(
        (pl.col("gpus").cast(pl.Int64) * pl.col("idle_minutes")).alias("_waste"), acting.alias("_acting")
    )
    order = ranked.filter(pl.col("_acting")).sort(["cluster", "_waste", "job_id"], descending=[False, True, False])
    order = order.with_columns(pl.int_range(pl.len()).over("cluster").alias("_rank"))
    cap = config.reclaim.max_actions_per_hour
    capped = [
        row for row, cluster, rank in zip(order["_row"], order["cluster"], order["_rank"], strict=True)
        if rank >= max(0, cap - already.get(cluster, 0))
    ]
    return ranked.with_columns(
        pl.when(pl.col("_row").is_in(capped)).then(pl.lit("capped")).otherwise("verdict").alias("verdict")
    ).drop("_row", "_waste", "_acting")
