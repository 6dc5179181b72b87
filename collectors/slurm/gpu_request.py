"""The GPUs a live job asks for (count and type), from whichever of Slurm's fields says it.

`tres_req_str` names `gres/gpu=N` (and `gres/gpu:<type>=N` for a typed request) only where the site's
`AccountingStorageTRES` tracks `gres/gpu`; slurmrestd 24.05 and 25.11 answers from such clusters carry
`cpu=1,mem=512M,node=1,billing=1` alone (tests/data/slurm/). The request as the user typed it is always
in the `tres_per_*` fields, in either spelling: `gres/gpu:h100:1` (23.11+) or `gres:gpu:h100:1` (22.05);
`tres_per_task` also as `gres/gpu=2`. So the count is `tres_req_str`'s when it has one, else the
request scaled to the job: per job as it is, per node times `node_count`, per task times `tasks`, per
socket times `node_count` (the sockets a pending job gets are not known yet: a lower bound).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

# Any length: an out-of-range count must reach the readers' range checks, not read as "no GPUs".
_GPU_IN_TRES = re.compile(r"(?:^|,)gres/gpu=(\d+)(?:,|$)", re.ASCII)
_TYPED_IN_TRES = re.compile(r"(?:^|,)gres/gpu:([^=,]{1,64})=\d{1,10}", re.ASCII)
# One GPU entry of a tres_per_* list: gres/gpu:h100:2, gres:gpu:2, gres/gpu=2, gpu:h100:2.
_PER_ENTRY = re.compile(r"^(?:gres[/:])?gpu(?::([^:=,]{1,64}))?[:=](\d{1,10})$", re.ASCII)
# (field, what it is multiplied by); the first field naming GPUs decides.
_SCALES = (("tres_per_job", None), ("tres_per_node", "node_count"), ("tres_per_task", "tasks"),
           ("tres_per_socket", "node_count"))


def gpu_in_tres(text: str | None) -> int | None:
    """`gres/gpu=N` in a TRES string such as `cpu=1,gres/gpu=2,gres/gpu:h100=2`."""
    m = _GPU_IN_TRES.search(text or "")
    return int(m.group(1)) if m else None


def _entries(text: str) -> list[tuple[str | None, int]]:
    """(type or None, count) of every GPU entry of a comma-separated tres_per_* value."""
    found = []
    for part in text.split(","):
        m = _PER_ENTRY.match(part.strip())
        if m:
            found.append((m.group(1), int(m.group(2))))
    return found


def _text(job: Mapping[str, Any], key: str) -> str:
    value = job.get(key)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise TypeError(f"{key} is a {type(value).__name__}, expected a string")
    return value


def gpu_request(job: Mapping[str, Any], number: Callable[[Any], int | None]) -> tuple[int | None, str | None]:
    """(GPUs asked in all, the GPU type asked or None) of a live job record; None GPUs when no field
    names any. Several types are joined with commas, sorted. `number` reads Slurm's integer forms
    (a plain int or `{set, infinite, number}`). Raises TypeError for a field of the wrong kind."""
    req = _text(job, "tres_req_str")
    types = set(_TYPED_IN_TRES.findall(req))
    count = gpu_in_tres(req)
    for field, scale in _SCALES:
        entries = _entries(_text(job, field))
        types.update(t for t, _ in entries if t)
        if count is None and entries:
            factor = 1 if scale is None else max(1, number(job.get(scale)) or 1)
            count = sum(n for _, n in entries) * factor
    return count, ",".join(sorted(types)) or None
