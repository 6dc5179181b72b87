# ruff: noqa: RUF009  # opt()/req() return dataclass fields carrying help text
"""How GPUs are counted: time-sliced (shared) GPUs by a configured fraction.

A MIG instance's share comes from its profile (gpusteward/capacity.py) and needs no config. A GPU
shared by time-slicing looks whole to DCGM and to the scheduler, which hands out `replicas`
"GPUs" per card (the NVIDIA device plugin's `sharing.timeSlicing.resources[].replicas`, Slurm's
`shard` count per GPU): each allocation on such a node then holds 1/replicas of a card, so four
notebooks on a card shared four ways count one GPU-hour per hour together, not four.
"""

from __future__ import annotations

from dataclasses import dataclass

from gpusteward.config.fields import opt, req


@dataclass(frozen=True)
class SharedGpus:
    hosts: str = req("glob on the node names whose GPUs are shared, as the job records name them (e.g. nb-*)")
    replicas: int = req(
        "workloads one GPU is shared between, as the device plugin's timeSlicing replicas; each GPU a job is"
        " allocated there counts 1/replicas of a GPU"
    )
    cluster: str = opt("*", "glob on the cluster name")


@dataclass(frozen=True)
class CapacityConfig:
    shared: list[SharedGpus] = opt(
        [], "time-sliced or otherwise shared GPUs, counted by their fraction; first match wins (docs/collectors.md)"
    )
