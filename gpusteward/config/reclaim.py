# ruff: noqa: RUF009  # opt()/req() return dataclass fields carrying help text
"""Reclaim policies of the config: which running work holds GPUs it does not use, and what to do about it.

A policy covers one scenario (optionally some teams and clusters) and says what counts (`when`), how
long it must last (`idle_for`), the grace between the owner's warning and the action (`grace`), who
is exempt, the action and the mode. docs/reclaim.md gives every default's grounding:

- `idle_for` 1h and `grace` 1h: Princeton's job_defense_shield (Jobstats) example for its
  cancel-zero-GPU-jobs alert warns at 60 minutes of 0% GPU utilisation and cancels at 120; Zero to
  JupyterHub's chart runs jupyterhub-idle-culler with `cull.timeout: 3600` (one hour without activity).
- `action` notify and `mode` shadow: nothing is taken back until a person chose an action and a mode;
  shadow records what would have happened, as the alert engine's shadow mode does.
- `min_replicas` 1: an inference service is never scaled to zero unless a policy says so (gpu-pruner
  scales to zero, but only the deployments its operator points it at).
- `max_actions_per_hour` 5 per cluster: no public tool sets a default (job_defense_shield has no cap),
  so this is a circuit breaker sized for a mistake, not for a pool: a telemetry fault that made every
  GPU look idle costs at most five jobs an hour before a person sees it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from gpusteward.config.fields import opt, req
from gpusteward.domain import Scenario

ReclaimWhen = Literal["idle", "idle_while_waiting", "no_traffic"]
ReclaimAction = Literal["notify", "requeue", "suspend", "cancel", "scale"]
ReclaimMode = Literal["shadow", "approve", "auto"]

DEFAULT_IDLE_FOR = timedelta(hours=1)
DEFAULT_GRACE = timedelta(hours=1)
DEFAULT_MAX_ACTIONS_PER_HOUR = 5
TAKING_ACTIONS: frozenset[str] = frozenset({"requeue", "suspend", "cancel", "scale"})
"""Actions that take GPUs back (the per-hour cap counts these; notify takes nothing)."""


@dataclass(frozen=True)
class ReclaimExemptions:
    accounts: list[str] = opt([], "globs on the scheduler account of work never reclaimed")
    qos: list[str] = opt([], "globs on the QOS of work never reclaimed")
    users: list[str] = opt([], "globs on the user of work never reclaimed")
    job_names: list[str] = opt([], "globs on the job name of work never reclaimed")
    labels: dict[str, str] = opt({}, "label globs (Kubernetes); work carrying any matching label is never reclaimed")
    reservations: list[str] = opt([], "globs on the Slurm reservation of work never reclaimed")


@dataclass(frozen=True)
class ReclaimPolicy:
    name: str = req("policy name, shown with every candidate and recorded with every warning and action")
    scenario: Scenario = req("scenario of the work the policy covers")
    when: ReclaimWhen = req(
        "what counts: idle (every GPU of the job idle, as [idle] defines it), idle_while_waiting (and other"
        " jobs wait for GPUs in its cluster), no_traffic (online_inference: no requests to the service)"
    )
    teams: list[str] = opt([], "teams the policy covers; empty: every team")
    clusters: str = opt("*", "glob on the clusters the policy covers")
    idle_for: timedelta = opt(DEFAULT_IDLE_FOR, "how long the condition must hold before the owner is warned")
    grace: timedelta = opt(DEFAULT_GRACE, "time between the warning and the action; 0s acts with the warning")
    action: ReclaimAction = opt(
        "notify", "notify (warn only), requeue, suspend, cancel, or scale (no_traffic: down to scale_to replicas)"
    )
    scale_to: int | None = opt(None, "action scale: replicas the service keeps (default: min_replicas)")
    min_replicas: int = opt(1, "no_traffic: replicas of a service never reclaimed")
    mode: ReclaimMode = opt(
        "shadow", "shadow (record what would happen), approve (a person with the approver role confirms), auto"
    )
    exempt: ReclaimExemptions = opt(ReclaimExemptions(), "work the policy never reclaims")


@dataclass(frozen=True)
class ReclaimConfig:
    paused: bool = opt(False, "kill switch: true stops every warning and action; `reclaim plan` still shows candidates")
    max_actions_per_hour: int = opt(
        DEFAULT_MAX_ACTIONS_PER_HOUR, "most taking actions (requeue, suspend, cancel, scale) per cluster in any hour"
    )
    policies: list[ReclaimPolicy] = opt([], "reclaim policies; the first that covers a job decides")
    receivers: list[str] = opt(
        [], "receivers ([[alerts.receivers]]) every warning and action notice goes to; empty: every receiver"
    )
    team_receivers: dict[str, list[str]] = opt({}, "per team, receivers its warnings also go to (the team's channel)")
    team_leads: dict[str, list[str]] = opt(
        {}, "per team, the identities (control API callers) who may exempt the team's jobs from reclaiming"
    )
    deployments: dict[str, str] = opt(
        {}, "scale actions: inference service -> the Kubernetes Deployment serving it, as namespace/name"
    )
    kubernetes_clusters: list[str] = opt(
        [], "clusters whose actions go to the [kubernetes] API server (Kueue Workloads, Deployments);"
        " Slurm clusters' go through their [[service.slurm]] entry"
    )
