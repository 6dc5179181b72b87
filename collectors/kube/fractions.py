"""A pod's GPU request in whole-GPU equivalents, from the resource names fractional GPUs use.

- `nvidia.com/mig-<profile>` (the NVIDIA device plugin's "mixed" MIG strategy): each instance
  counts its profile's slices of a card (`mig-1g.10gb` = 1/7).
- A core share next to a GPU count: HAMi's `nvidia.com/gpucores` and Volcano's
  `volcano.sh/vgpu-cores` (percent of one GPU's cores per device) with `nvidia.com/gpu` or
  `volcano.sh/vgpu-number`: each device counts its percentage.
- Whole GPUs (`nvidia.com/gpu`, or the configured resource) count 1 each.

None when the request names no fractional resource: the whole-GPU count says it all.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from collectors.kube.api import quantity
from gpusteward.capacity import mig_share
from gpusteward.errors import InputError

MIG_PREFIX = "nvidia.com/mig-"
CORE_SHARES = {"nvidia.com/gpucores": "nvidia.com/gpu", "volcano.sh/vgpu-cores": "volcano.sh/vgpu-number"}


def gpu_equivalents(requests: Mapping[str, Any], gpu: str, *, source: str) -> float | None:
    """Whole-GPU equivalents of one container's (or a pod group's) resource requests."""
    fractional = False
    total = 0.0
    counted: set[str] = set()
    for cores_name, count_name in CORE_SHARES.items():
        cores = quantity(requests.get(cores_name), source=source)
        devices = quantity(requests.get(count_name), source=source)
        if cores is not None and devices:
            if not 0 < cores <= 100:
                raise InputError(source, f"{cores_name} {cores} is not a percentage of a GPU (1..100)")
            total += devices * cores / 100.0
            counted.add(count_name)
            fractional = True
    for name, value in requests.items():
        if not name.startswith(MIG_PREFIX):
            continue
        share = mig_share(name.removeprefix(MIG_PREFIX), None)
        if isinstance(share, str):
            raise InputError(source, f"resource {name} {share.removeprefix('whose GPU_I_PROFILE label ')}")
        total += (quantity(value, source=source) or 0) * share
        fractional = True
    if not fractional:
        return None
    if gpu not in counted:
        total += quantity(requests.get(gpu), source=source) or 0
    return total
