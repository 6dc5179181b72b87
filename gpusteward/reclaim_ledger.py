"""The reclaim ledger's table contract: one row per warning and per action the service decided.

Shared by the pure decider (sla/reclaim_decide.py), the warehouse that stores the rows (migration
029) and the reports that read them, so none of them imports another for it.
"""

from __future__ import annotations

import polars as pl

from gpusteward.tables import TS, schema

RECLAIM_DECISIONS = schema({
    "decision_id": pl.Utf8,
    "kind": pl.Utf8,  # warning | action
    "warning_id": pl.Utf8,  # action: the warning it follows
    "cluster": pl.Utf8,
    "job_id": pl.Utf8,
    "job": pl.Utf8,
    "run_start": TS,  # the job record's start: a requeued job's next run is a new episode
    "user_name": pl.Utf8,
    "account": pl.Utf8,
    "team": pl.Utf8,
    "scenario": pl.Utf8,
    "service": pl.Utf8,
    "policy": pl.Utf8,
    "action": pl.Utf8,
    "mode": pl.Utf8,
    "gpus": pl.Int32,
    "idle_since": TS,
    "idle_minutes": pl.Int64,
    "decided_at": TS,  # the plan's instant (the service's ingest watermark)
    "action_due": TS,
    "state": pl.Utf8,  # see WARNING_STATES and ACTION_STATES
    "decided_by": pl.Utf8,  # `policy <name>`, or the approver's identity
    "acted_at": TS,
    "transport": pl.Utf8,
    "outcome": pl.Utf8,
    "idle_gpu_hours": pl.Float64,
    "gpu_hours_recovered": pl.Float64,
})

WARNING_STATES = ("shadow", "sent")
"""shadow: recorded, nobody told (the policy's shadow mode); sent: handed to the alert outbox."""
ACTION_STATES = ("shadow", "awaiting_approval", "pending", "done", "already_ended", "failed", "rejected", "stale")
"""shadow: what would have been done; awaiting_approval: approve mode, until a person with the approver
role decides; pending: due to be sent to the scheduler (auto, or approved); done; already_ended: the job
had ended when the scheduler was asked (a retried cancel is not an error); failed: the scheduler refused
(the outcome says why); rejected: an approver said no; stale: dropped when it was due to be sent, because
the job was no longer a candidate (busy again, silent, exempt, nobody waiting: the outcome says which)."""
TAKEN = ("pending", "done", "failed")
"""Action states the per-hour cap counts: sent to the scheduler, or about to be."""
