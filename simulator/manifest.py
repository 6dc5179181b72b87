"""What the simulator wrote and what it planted: `OUT/manifest.json`, for tests and the demo summary."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

MANIFEST_FILE = "manifest.json"
# Not telemetry: an importer of the simulator's output skips it (`import --ignore`, `import_ignore`).
IMPORT_IGNORE = (MANIFEST_FILE,)


@dataclass(frozen=True)
class Problem:
    """A planted problem (or an incidental event): what, about whom, when (ISO UTC), with measurements."""

    kind: str
    subject: str
    start: str
    end: str
    details: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ClusterInfo:
    hosts: tuple[str, ...]
    gpus: int  # schedulable GPU slots: whole GPUs, MIG instances (their own series) and a time-sliced node's shards
    cards: int = 0  # physical GPUs: a MIG node's split cards and a shared node's cards once each (0: older manifests)


@dataclass(frozen=True)
class Manifest:
    seed: int
    start: str  # first day, YYYY-MM-DD
    days: int
    nodes: int
    clusters: dict[str, ClusterInfo]
    planted: tuple[Problem, ...]
    incidents: tuple[Problem, ...]  # events that are not objective breaches (node failures)
    files: tuple[str, ...]  # paths relative to the output folder, sorted

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True) + "\n"

    @classmethod
    def from_json(cls, text: str) -> Manifest:
        raw = json.loads(text)
        return cls(
            seed=raw["seed"],
            start=raw["start"],
            days=raw["days"],
            nodes=raw["nodes"],
            clusters={
                k: ClusterInfo(tuple(v["hosts"]), v["gpus"], v.get("cards", 0)) for k, v in raw["clusters"].items()
            },
            planted=tuple(Problem(**p) for p in raw["planted"]),
            incidents=tuple(Problem(**p) for p in raw["incidents"]),
            files=tuple(raw["files"]),
        )

    @classmethod
    def load(cls, path: Path) -> Manifest:
        return cls.from_json(path.read_text(encoding="utf-8"))

    def problem(self, kind: str) -> Problem | None:
        return next((p for p in self.planted if p.kind == kind), None)
