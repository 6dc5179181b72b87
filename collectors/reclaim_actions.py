"""The scheduler side of reclaiming: one `ReclaimActions` protocol, implemented for Slurm and Kubernetes.

An action names its target (`ReclaimTarget`) and returns what the scheduler did (`ActionResult`).
Every implementation is idempotent: asking again for what is already so (a retried cancel of a job
that ended, a requeue of a job already waiting again, a deployment already at its replicas) is not an
error but `already_ended` or `done` with a detail that says so, because the service retries an
action whose outcome it did not get to record. Failures say what to do next: TransientError (the
service tries again at its next turn), PermanentError (recorded as failed, never retried).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Protocol

ActionState = Literal["done", "already_ended"]


@dataclass(frozen=True)
class ReclaimTarget:
    cluster: str
    job_id: str  # the scheduler's job id (a Kubernetes job record: `namespace/workload`)
    action: str  # requeue | suspend | cancel | scale
    job_name: str | None = None
    service: str | None = None  # scale: the inference service whose deployment is scaled
    replicas: int | None = None  # scale: the replicas the deployment keeps


@dataclass(frozen=True)
class ActionResult:
    state: ActionState
    transport: str
    detail: str


class ReclaimActions(Protocol):
    """Takes reclaim actions on one cluster's scheduler."""

    @property
    def transport(self) -> str: ...

    def act(self, target: ReclaimTarget) -> ActionResult:
        """Do `target.action`; raise TransientError to be retried, PermanentError when it cannot be done."""
        ...
