"""Copies of a simulated fleet under new cluster names: a large fleet from a small simulation (bench helper).

The simulator's scheduler costs grow faster than linearly with the nodes of a cluster (every
pass walks the pending jobs against the hosts), so 1,250 nodes do not simulate in a benchmark's
time. Ten renamed copies of a 125-node simulation are the same files the importer reads for a
1,250-node fleet of twenty clusters: `east` becomes `east0`, `east1`, ... in every label, JSON
field and host name (`east-gpu-01` -> `east3-gpu-01`), so each copy's (cluster, job id) and
(cluster, host, GPU) keys are its own. The manifest is not copied (it is never imported).
"""

from __future__ import annotations

import gzip
from dataclasses import replace
from pathlib import Path

from gpusteward.config.schema import Config

CLUSTERS = ("east", "west")


def _renamed(data: bytes, copy: int) -> bytes:
    for name in CLUSTERS:
        new = f"{name}{copy}".encode()
        old = name.encode()
        data = data.replace(b'"' + old + b'"', b'"' + new + b'"').replace(old + b"-gpu-", new + b"-gpu-")
        # sacctmgr -P lines start with the cluster: "east|root|||"
        data = data.replace(b"\n" + old + b"|", b"\n" + new + b"|")
    return data


def replicate(src: Path, dst: Path, copies: int) -> int:
    """Write `copies` renamed copies of every data file under `src` to `dst`; the bytes written."""
    written = 0
    for path in sorted(src.rglob("*")):
        if not path.is_file() or path.name == "manifest.json":
            continue
        kind, cluster = path.relative_to(src).parts[:2]
        raw = path.read_bytes()
        zipped = path.suffix == ".gz"
        text = gzip.decompress(raw) if zipped else raw
        for copy in range(copies):
            out = dst / kind / f"{cluster}{copy}" / path.name
            out.parent.mkdir(parents=True, exist_ok=True)
            body = _renamed(text, copy)
            out.write_bytes(gzip.compress(body, compresslevel=1, mtime=0) if zipped else body)
            written += out.stat().st_size
    return written


def config_for_copies(config: Config, copies: int) -> Config:
    """`config` with each cluster repeated under the copies' names (same time zone, GPUs from telemetry)."""
    clusters = [replace(c, name=f"{c.name}{k}", gpus=0) for k in range(copies) for c in config.clusters]
    return replace(config, clusters=clusters)
