"""From a reclaim plan to the ledger's new lines: which warnings to send and which actions to take now.

Pure: the plan (sla.reclaim), the ledger lines of the running jobs (RECLAIM_DECISIONS) and the
instant in, the new lines out. An episode is one run of one job under one policy (a requeued job's
next run is a new episode):
- a candidate at stage `warn` gets a warning (the plan says `warn` again only when the job was busy
  since the last warning, or the warning was about an earlier run);
- a candidate at stage `act` gets its action, once per episode, after the warning it follows (with
  `grace = "0s"` the warning is written with it: the owner is still told what happened);
- `grace`, `warned`, capped, paused and left-alone rows add nothing.
A warning's state is `shadow` in shadow mode (recorded, nobody told), else `sent`. An action's is
`shadow`, `awaiting_approval` (approve mode: until a person with the approver role decides) or
`pending` (auto: sent to the scheduler next). Decision ids are digests of what they decide, so
deciding the same plan twice (a restarted service at the same watermark) writes nothing new.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

import polars as pl

from gpusteward.reclaim_ledger import RECLAIM_DECISIONS
from sla.common import naive_utc
from sla.reclaim_inputs import ACTED, WARNED

_ACTION_STATE = {"shadow": "shadow", "approve": "awaiting_approval", "auto": "pending"}


def decision_id(kind: str, row: Mapping[str, Any], at: datetime) -> str:
    start = row["run_start"].isoformat() if row["run_start"] is not None else ""
    key = "\x1f".join((kind, row["cluster"], row["job_id"], start, row["policy"], at.isoformat()))
    return hashlib.sha256(key.encode()).hexdigest()[:32]


def _episode(row: Mapping[str, Any]) -> tuple[Any, ...]:
    return row["cluster"], row["job_id"], row["run_start"], row["policy"]


def warned_of(ledger: pl.DataFrame) -> pl.DataFrame:
    """WARNED (the evaluator's input) from the ledger: every warning, with the run it was about."""
    warnings = ledger.filter(pl.col("kind") == "warning")
    return warnings.select(
        "cluster", "job_id", "policy", pl.col("decided_at").alias("warned_at"), "run_start"
    ).cast(dict(WARNED))  # type: ignore[arg-type]


def acted_of(ledger: pl.DataFrame) -> pl.DataFrame:
    """ACTED (the evaluator's input) from the ledger: the runs with an action under a policy, less dropped ones."""
    actions = ledger.filter((pl.col("kind") == "action") & (pl.col("state") != "stale"))
    return actions.select("cluster", "job_id", "policy", "run_start").unique().cast(dict(ACTED))  # type: ignore[arg-type]


def _line(row: Mapping[str, Any], kind: str, at: datetime, state: str, warning_id: str | None) -> dict[str, Any]:
    gpus, minutes = row["gpus"], row["idle_minutes"]
    return {
        "decision_id": decision_id(kind, row, at), "kind": kind, "warning_id": warning_id,
        "cluster": row["cluster"], "job_id": row["job_id"], "job": row["job"], "run_start": row["run_start"],
        "user_name": row["user"], "account": row["account"], "team": row["team"], "scenario": row["scenario"],
        "service": row["service"], "policy": row["policy"], "action": row["action"], "mode": row["mode"],
        "gpus": gpus, "idle_since": row["idle_since"], "idle_minutes": minutes, "decided_at": at,
        "action_due": row["action_due"], "state": state, "decided_by": f"policy {row['policy']}",
        "idle_gpu_hours": None if gpus is None or minutes is None else gpus * minutes / 60.0,
    }


def decide(plan: pl.DataFrame, ledger: pl.DataFrame, now: datetime) -> pl.DataFrame:
    """The ledger lines (RECLAIM_DECISIONS) the plan at `now` adds to `ledger`."""
    at = naive_utc(now)
    acted: set[tuple[Any, ...]] = set()
    latest_warning: dict[tuple[Any, ...], tuple[datetime, str]] = {}
    for line in ledger.sort("decided_at").to_dicts():
        if line["kind"] == "action" and line["state"] != "stale":  # a dropped action leaves the run to a new warning
            acted.add(_episode(line))
        else:
            latest_warning[_episode(line)] = (line["decided_at"], line["decision_id"])
    out: list[dict[str, Any]] = []
    for row in plan.filter(pl.col("verdict") == "candidate").to_dicts():
        episode = _episode(row)
        if episode in acted or row["stage"] not in ("warn", "act"):
            continue
        warning_state = "shadow" if row["mode"] == "shadow" else "sent"
        if row["stage"] == "warn":
            out.append(_line(row, "warning", at, warning_state, None))
            continue
        warned = latest_warning.get(episode)
        if warned is not None and not row["idle_since_clipped"] and warned[0] < row["idle_since"]:
            warned = None  # about an earlier idle stretch (the evaluator ignored it too)
        if warned is None:  # grace 0s: the warning goes with the action
            warning = _line(row, "warning", at, warning_state, None)
            out.append(warning)
            warning_id = str(warning["decision_id"])
        else:
            warning_id = warned[1]
        out.append(_line(row, "action", at, _ACTION_STATE[row["mode"]], warning_id))
    return pl.DataFrame(out, schema=RECLAIM_DECISIONS, orient="row") if out else pl.DataFrame(schema=RECLAIM_DECISIONS)
