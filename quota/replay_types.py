"""What the replay takes and returns (pure data): a cluster's scheduler, its jobs, their segments."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from quota.preemption import PreemptionRules


@dataclass(frozen=True)
class ClusterModel:
    """What the replay knows of one cluster's scheduler besides the account limits it varies."""

    node_gpus: tuple[int, ...]  # GPUs of each node, in node order
    node_names: tuple[str, ...] = ()  # the nodes' names, to place jobs that started before the window
    parents: Mapping[str, str | None] = field(default_factory=dict)  # account -> parent account
    qos_limits: Mapping[str, int | None] = field(default_factory=dict)  # QOS -> GrpTRES gres/gpu
    account_limits: Mapping[str, int | None] = field(default_factory=dict)  # the tree's, where the replay's omit one
    rules: PreemptionRules = field(default_factory=PreemptionRules)
    # Shared (time-sliced) nodes -> the queues whose records ran there: their GPUs are the slots the
    # scheduler hands out (cards x replicas), a pool of its own that only the jobs that ran there
    # use, and those jobs no other node (a Slurm shard request fits shard nodes only, a GPU request
    # never fits them). Nodes not named here: any job.
    node_queues: Mapping[str, frozenset[str]] = field(default_factory=dict)

    @classmethod
    def pool(cls, gpus: int) -> ClusterModel:
        """A cluster whose nodes are unknown: one node of all its GPUs (no packing)."""
        return cls((gpus,))

    @property
    def gpus(self) -> int:
        return sum(self.node_gpus)

    def part(self, shared: bool) -> tuple[ClusterModel, tuple[int, ...]]:
        """The model of its shared nodes alone (or of the others), and their indices in this model."""
        keep = tuple(n for n, name in enumerate(self.node_names) if (name in self.node_queues) == shared)
        sub = replace(self, node_gpus=tuple(self.node_gpus[n] for n in keep),
                      node_names=tuple(self.node_names[n] for n in keep), node_queues={})
        return sub, keep


@dataclass(frozen=True)
class ReplayJob:
    """One job as the model replays it (a chain of requeued records is one job)."""

    submit: float
    work: float  # seconds of running it needs
    limit: float  # its time limit in seconds (what backfill plans with)
    gpus: int
    nodes: int  # nodes it spans
    account: str
    qos: str
    order: tuple[float, float, float]  # (-QOS priority, -priority, submit)
    pinned_start: float | None = None  # started before the window: keeps this start
    pinned_hosts: tuple[str, ...] = ()


Segment = tuple[int, float, float, float]
"""(job index, queued at, started at, ended at): one stretch of a job from eligible to end; a
requeued job has one per start; inf: never started."""


@dataclass(frozen=True)
class ReplayResult:
    segments: list[Segment]
    placements: list[tuple[tuple[int, int], ...]]  # per segment, its (node, GPUs); () when it never started
    preemptions: list[tuple[int, int, float]]  # (victim, preemptor, time)
