"""The per-GPU bucket series of the read model: one Parquet file per UTC day, published incrementally.

    v<version>/gpu_buckets/day=YYYY-MM-DD/part-0.parquet     GPU_BUCKETS of that day (warehouse/gpu_buckets.py)

A day's file is named in the version's manifest with its fingerprint (`gpu_buckets.day_fingerprints`).
Publishing a version computes only the days whose fingerprint changed since the current version (in
a live pool: today, and a day an import added late rows to); every other day's file is hard-linked
from the current version, so a closed day is never recomputed nor rewritten, and each version folder
still holds every file it names (pruning an old version removes its links, not the data a newer one
shares). Where the file system cannot link, the file is copied.

Readers read a day's file only when asked (the heatmap reads one or two days, a job's page the days
it ran), never the month at once.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from gpusteward import tables
from warehouse.gpu_buckets import GPU_BUCKETS, day_fingerprints, day_span, gpu_buckets
from warehouse.store import Warehouse

TABLE = "gpu_buckets"
CHUNK_DAYS = 7
"""Days computed by one query when many changed (the first publish): one scan of the minute rows per
week, a week of 1,000 GPUs' buckets (about two million rows) in memory at a time."""

Index = dict[str, dict[str, str]]
"""Manifest entry: ISO day -> {"file": path inside the version folder, "fingerprint": ...}."""


class GpuSeries(Protocol):
    """Per-GPU buckets by UTC day, wherever they are held."""

    def fingerprints(self) -> Mapping[date, str]: ...
    def day_frames(self, days: Sequence[date], keep: pl.Expr | None = None) -> Iterator[tuple[date, pl.DataFrame]]:
        """Each of `days`' buckets, only the rows `keep` is true for when given."""
        ...


def _days_between(lo: datetime, hi: datetime) -> list[date]:
    first, last = lo.date(), (hi - timedelta(microseconds=1)).date()
    return [first + timedelta(days=i) for i in range((last - first).days + 1)] if hi > lo else []


def wanted(lo: datetime, hi: datetime, cluster: str | None, job_id: str | None) -> pl.Expr:
    """Buckets starting in [lo, hi), of `cluster` and `job_id` when given."""
    keep = pl.col("bucket").is_between(lo, hi, closed="left")
    if cluster is not None:
        keep &= pl.col("cluster") == cluster
    if job_id is not None:
        keep &= pl.col("job_id") == job_id
    return keep


def between(
    series: GpuSeries, lo: datetime, hi: datetime, *, cluster: str | None = None, job_id: str | None = None
) -> pl.DataFrame:
    """The buckets starting in [lo, hi) (naive UTC), optionally of one cluster and one job label."""
    known = series.fingerprints()
    days = [d for d in _days_between(lo, hi) if d in known]
    parts = [frame for _, frame in series.day_frames(days, wanted(lo, hi, cluster, job_id))]
    parts = [p for p in parts if p.height]
    return pl.concat(parts) if parts else tables.empty(GPU_BUCKETS)


@dataclass(frozen=True)
class MemorySeries:
    """Days held in memory (the dashboard reading a warehouse file directly; tests)."""

    days: Mapping[date, pl.DataFrame] = field(default_factory=dict)
    marks: Mapping[date, str] = field(default_factory=dict)

    def fingerprints(self) -> Mapping[date, str]:
        return {d: self.marks.get(d, "") for d in self.days}

    def day_frames(self, days: Sequence[date], keep: pl.Expr | None = None) -> Iterator[tuple[date, pl.DataFrame]]:
        for d in days:
            if d in self.days:
                yield d, self.days[d] if keep is None else self.days[d].filter(keep)


@dataclass(frozen=True)
class WarehouseSeries:
    """Days computed from the warehouse on demand: valid while `wh` (a snapshot view) is open."""

    wh: Warehouse
    marks: Mapping[date, str]

    @classmethod
    def of(cls, wh: Warehouse) -> WarehouseSeries:
        return cls(wh, day_fingerprints(wh))

    def fingerprints(self) -> Mapping[date, str]:
        return self.marks

    def day_frames(self, days: Sequence[date], keep: pl.Expr | None = None) -> Iterator[tuple[date, pl.DataFrame]]:
        """Consecutive days are computed a week at a time (one scan), then split by day."""
        for run in _runs(sorted(d for d in days if d in self.marks)):
            lo, hi = day_span(run[0])[0], day_span(run[-1])[1]
            frame = gpu_buckets(self.wh, lo, hi)
            frame = frame if keep is None else frame.filter(keep)
            by_day = frame.with_columns(pl.col("bucket").dt.date().alias("_day")).partition_by(
                "_day", as_dict=True, include_key=False
            )
            for d in run:
                part = by_day.get((d,))
                yield d, part if part is not None else tables.empty(GPU_BUCKETS)

    def materialize(self) -> MemorySeries:
        return MemorySeries(dict(self.day_frames(list(self.marks))), dict(self.marks))


def _runs(days: list[date]) -> Iterator[list[date]]:
    run: list[date] = []
    for d in days:
        if run and (d - run[-1] != timedelta(days=1) or len(run) >= CHUNK_DAYS):
            yield run
            run = []
        run.append(d)
    if run:
        yield run


@dataclass
class ParquetSeries:
    """A published version's day files, read when asked. A file pruned meanwhile (the version is three
    publications old) is read from the version current then, through `refresh`."""

    folder: Path
    index: Index
    refresh: Callable[[], tuple[Path, Index]] | None = None

    def fingerprints(self) -> Mapping[date, str]:
        return {date.fromisoformat(d): entry["fingerprint"] for d, entry in self.index.items()}

    def day_frames(self, days: Sequence[date], keep: pl.Expr | None = None) -> Iterator[tuple[date, pl.DataFrame]]:
        for d in days:
            entry = self.index.get(d.isoformat())
            if entry is None:
                continue
            yield d, self._read(d.isoformat(), keep)

    def _read(self, day: str, keep: pl.Expr | None) -> pl.DataFrame:
        try:
            return self._scan(day, keep)
        except FileNotFoundError:
            if self.refresh is None:
                raise
            self.folder, self.index = self.refresh()
            if day not in self.index:
                return tables.empty(GPU_BUCKETS)
            return self._scan(day, keep)

    def _scan(self, day: str, keep: pl.Expr | None) -> pl.DataFrame:
        """The filter is pushed into the Parquet reader: one job's month of buckets on 1,000 GPUs read in
        0.4-0.8 s instead of 6-8 s reading every day file whole (docs/performance.md)."""
        scan = pl.scan_parquet(self.folder / self.index[day]["file"])
        return tables.conform((scan if keep is None else scan.filter(keep)).collect(), GPU_BUCKETS)


@dataclass(frozen=True)
class Written:
    """What one publication did with the days: for the publish metrics and the docs' figures."""

    index: Index
    computed: int
    linked: int


def day_file(day: date) -> str:
    return f"{TABLE}/day={day.isoformat()}/part-0.parquet"


def write_series(series: GpuSeries, folder: Path, previous: tuple[Path, Index] | None) -> Written:
    """Write `series` into the version being built at `folder`, linking each day whose fingerprint the
    previous version (its folder and index) already published."""
    marks = series.fingerprints()
    index: Index = {}
    linked = 0
    changed: list[date] = []
    for day, mark in sorted(marks.items()):
        old = previous[1].get(day.isoformat()) if previous else None
        if previous and old and mark and old["fingerprint"] == mark and _link(previous[0] / old["file"],
                                                                              folder / day_file(day)):
            linked += 1
            index[day.isoformat()] = {"file": day_file(day), "fingerprint": mark}
        else:
            changed.append(day)
    for day, frame in series.day_frames(changed):
        path = folder / day_file(day)
        path.parent.mkdir(parents=True, exist_ok=True)
        tables.conform(frame, GPU_BUCKETS).write_parquet(path)
        index[day.isoformat()] = {"file": day_file(day), "fingerprint": marks[day]}
    return Written(dict(sorted(index.items())), len(changed), linked)


def _link(source: Path, target: Path) -> bool:
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(source, target)
    except FileNotFoundError:
        return False
    except OSError:
        shutil.copyfile(source, target)  # no hard links on this file system
    return True


def read_index(manifest: Mapping[str, Any]) -> Index:
    """The series entry of a version's manifest; none in a version published before it existed."""
    entry = manifest.get(TABLE)
    days = entry.get("days") if isinstance(entry, dict) else None
    return {str(d): dict(v) for d, v in days.items()} if isinstance(days, dict) else {}
