"""Readers the simulator tests share: plain file access, no project parsers."""

from __future__ import annotations

import calendar
import gzip
import json
import re
from datetime import date
from pathlib import Path
from typing import Any


def sacct_jobs(out: Path, cluster: str) -> list[dict[str, Any]]:
    """Every record of every monthly sacct file of a cluster."""
    jobs: list[dict[str, Any]] = []
    for path in sorted((out / "slurm" / cluster).glob("sacct-*.json.gz")):
        jobs += json.loads(gzip.decompress(path.read_bytes()))["jobs"]
    return jobs


def text(path: Path) -> str:
    return gzip.decompress(path.read_bytes()).decode()


def epoch(day: date) -> int:
    return calendar.timegm(day.timetuple())


def gpus_of(job: dict[str, Any]) -> int:
    return sum(t["count"] for t in job["tres"]["allocated"] if t["type"] == "gres" and t["name"] == "gpu")


def shards_of(job: dict[str, Any]) -> int:
    """gres/shard: shards of the time-sliced node's GPUs (a notebook that asked `--gres=shard:1`)."""
    return sum(t["count"] for t in job["tres"]["allocated"] if t["type"] == "gres" and t["name"] == "shard")


def gpu_equivalents_of(job: dict[str, Any]) -> float:
    """gres/gpu in whole GPUs: a typed MIG gres (`gpu:3g.40gb`) counts its slices of a 7-slice H100, a
    shard a quarter of its card (the demo config's `[[capacity.shared]]` replicas)."""
    if shards_of(job):
        return shards_of(job) / 4
    gres = [t for t in job["tres"]["allocated"] if t["type"] == "gres"]
    mig = [(int(t["name"][4:].split("g.")[0]), t["count"]) for t in gres if re.fullmatch(r"gpu:\dg\.\d+gb", t["name"])]
    return float(gpus_of(job) - sum(n for _, n in mig) + sum(s * n / 7 for s, n in mig))


def sample_time(line: str) -> float:
    return float(line.rsplit(" ", 1)[1])


def label(line: str, name: str) -> str | None:
    """A label's value in a sample line (`job` does not match `hpc_job`)."""
    for key in (f'{{{name}="', f',{name}="'):
        i = line.find(key)
        if i >= 0:
            j = line.index('"', i + len(key))
            return line[i + len(key) : j]
    return None


def expand_hostlist(expr: str) -> list[str]:
    """`west-gpu-[01-02,04]` -> its hosts (the forms the simulator writes)."""
    if "[" not in expr:
        return [expr]
    prefix, rest = expr.split("[", 1)
    hosts = []
    for part in rest.rstrip("]").split(","):
        lo, _, hi = part.partition("-")
        width = len(lo)
        hosts += [f"{prefix}{i:0{width}d}" for i in range(int(lo), int(hi or lo) + 1)]
    return hosts
