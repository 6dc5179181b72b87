"""What a collector returns: typed tables plus the problems it met."""

from __future__ import annotations

from dataclasses import dataclass, field

import polars as pl

from gpusteward import tables


@dataclass(frozen=True)
class Problem:
    """Something a collector could not read; the rest of its data is still good."""

    source: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.source}:{self.line}" if self.line is not None else self.source
        return f"{where}: {self.message}"


@dataclass
class CollectedBatch:
    """Frames keyed by table name (`gpu_minutes`, `jobs`, ...), each conforming to its schema."""

    source: str
    frames: dict[str, pl.DataFrame] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def add(self, table: str, frame: pl.DataFrame) -> None:
        schema = TABLE_SCHEMAS[table]
        conformed = tables.conform(frame, schema)
        if table in self.frames:
            conformed = pl.concat([self.frames[table], conformed])
        self.frames[table] = conformed

    @property
    def rows(self) -> dict[str, int]:
        return {name: frame.height for name, frame in self.frames.items()}


TABLE_SCHEMAS: dict[str, pl.Schema] = {
    "gpu_minutes": tables.GPU_MINUTES,
    "jobs": tables.JOBS,
    "job_events": tables.JOB_EVENTS,
    "inference_windows": tables.INFERENCE_WINDOWS,
    "quota_snapshots": tables.QUOTA_SNAPSHOTS,
    "quota_usage": tables.QUOTA_USAGE,
    "account_tree": tables.ACCOUNT_TREE,
    "pending_jobs": tables.PENDING_JOBS,
}
