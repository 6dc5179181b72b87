"""What keeps reclaiming safe: exemptions, the warning-then-grace stages, the per-hour cap, the kill switch.

- An exemption the data cannot check is not assumed away: a policy that exempts labels or
  reservations leaves alone every job whose record does not say them (null; `exemption_unknown`).
- Stages: a candidate not yet warned is warned now and acted on after `grace` (at once when grace
  is 0s); a warned one waits out its grace (`grace`), then is acted on (`act`). A notify policy's
  action is the warning itself (`warn`, then `warned`).
- The cap: in each cluster at most `max_actions_per_hour` taking actions in any hour, counting those
  already taken in the last hour; the candidates wasting the most GPU-time go first, the rest are
  `capped` (reported, not acted on).
- The kill switch (`reclaim.paused`) turns every candidate into `paused`: shown, never acted on.
"""

from __future__ import annotations

import json
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


def _labels(value: Any) -> Mapping[str, Any] | None:
    """A record's labels (a JSON object's text, as the warehouse stores them), or None when unknown."""
    if value is None:
        return None
    if isinstance(value, Mapping):
        return value
    try:
        parsed = json.loads(str(value))
    except ValueError:
        return None
    return parsed if isinstance(parsed, Mapping) else None


def exemption(policy: ReclaimPolicy, job: Mapping[str, Any]) -> str | None:
    """The reason `job` (a running JOBS row) is exempt from `policy`, or None. A label or reservation
    exemption that the record cannot show (null: the source did not say) leaves the job alone."""
    ex = policy.exempt
    simple = (("accounts", "account", "exempt_account"), ("qos", "qos", "exempt_qos"),
              ("users", "user", "exempt_user"), ("job_names", "name", "exempt_name"))
    for setting, column, reason in simple:
        if _any(getattr(ex, setting), job.get(column)):
            return reason
    if ex.labels:
        labels = _labels(job.get("labels"))
        if labels is None:
            return "exemption_unknown"
        if any(k in labels and fnmatchcase(str(labels[k]), v) for k, v in ex.labels.items()):
            return "exempt_label"
    if ex.reservations:
        reservation = job.get("reservation")
        if reservation is None:
            return "exemption_unknown"
        if reservation != "" and _any(ex.reservations, reservation):  # "": it ran in no reservation
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


def apply_safety(
    plan: pl.DataFrame, config: Config, now: datetime, recent_actions: pl.DataFrame, acted: pl.DataFrame | None = None
) -> pl.DataFrame:
    """The plan with the per-hour cap and the kill switch applied to its candidates; those whose run was already
    acted on under their policy (`acted`, ACTED) take no place under the cap again."""
    if config.reclaim.paused:
        return plan.with_columns(
            pl.when(pl.col("verdict") == "candidate").then(pl.lit("paused")).otherwise("verdict").alias("verdict")
        )
    taken = recent_actions.filter((pl.col("at") > now - HOUR) & (pl.col("at") <= now)).group_by("cluster").len()
    already = dict(zip(taken["cluster"].to_list(), taken["len"].to_list(), strict=True))
    done = {(r["cluster"], r["job_id"], r["policy"], r["run_start"]) for r in acted.to_dicts()} if acted is not None \
        else set()
    already_acted = pl.struct("cluster", "job_id", "policy", "run_start").map_elements(
        lambda r: (r["cluster"], r["job_id"], r["policy"], r["run_start"]) in done, return_dtype=pl.Boolean)
    acting = (
        (pl.col("verdict") == "candidate") & (pl.col("stage") == "act") & pl.col("action").is_in(list(TAKING_ACTIONS))
    )
    if done:
        acting = acting & ~already_acted
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


def recheck(
    line: Mapping[str, Any], plan: pl.DataFrame, running: pl.DataFrame, sent_last_hour: int, config: Config
) -> tuple[str, str]:
    """Whether a pending action (auto, or approved, perhaps hours after it was decided) may go to the scheduler
    now: ("go" | "hold" | "ended" | "stale", why), against the plan at this turn's watermark.

    - the kill switch holds it (`hold`: it waits, and goes once the switch is lifted);
    - a run that is no longer running (not among the running records) has `ended`: nothing is sent;
    - a job the plan no longer finds a candidate of the action's policy (busy, silent, exempt or objected
      to, nobody waiting, within the inference reserve, or idle again only after being busy: a new idle
      stretch is warned anew) is `stale`: the action is dropped, never sent;
    - the per-hour cap: with `sent_last_hour` taking actions already sent in the cluster in the last hour
      (this turn's included), one more waits (`hold`) until the hour has room."""
    if config.reclaim.paused:
        return "hold", "the kill switch (reclaim.paused) is on"
    started = running.filter(
        (pl.col("cluster") == line["cluster"]) & (pl.col("job_id").cast(pl.Utf8) == line["job_id"])
        & (pl.col("start_time") == line["run_start"])
    )
    if line["run_start"] is not None and started.is_empty():
        return "ended", "the job's run had ended before the action was sent"
    rows = plan.filter(
        (pl.col("cluster") == line["cluster"]) & (pl.col("job_id") == line["job_id"])
        & (pl.col("policy") == line["policy"])
    ).to_dicts()
    if not rows:
        return "stale", f"policy {line['policy']} no longer covers the job"
    row = rows[0]
    if row["verdict"] == "left_alone":
        return "stale", f"left alone now: {row['reason']}"
    was = line["idle_since"]
    if not row["idle_since_clipped"] and was is not None and row["idle_since"] is not None and row["idle_since"] > was:
        return "stale", f"busy since the warning (idle again only since {row['idle_since']:%Y-%m-%d %H:%M})"
    cap = config.reclaim.max_actions_per_hour
    if line["action"] in TAKING_ACTIONS and sent_last_hour >= cap:
        return "hold", f"the per-hour cap: {sent_last_hour} of {cap} actions sent in cluster {line['cluster']}"
    return "go", ""
