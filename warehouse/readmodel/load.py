"""Reading the current version back: Parquet through polars, no DuckDB connection, no lock on the live
warehouse file, no SQL."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from functools import lru_cache
from pathlib import Path

import polars as pl

from gpusteward import tables
from warehouse import gpu_series
from warehouse.gpu_series import ParquetSeries
from warehouse.readmodel.model import NoReadModelError, ReadModel
from warehouse.readmodel.tables import FORMAT, MONTH_TABLES, WHOLE_TABLES
from warehouse.readmodel.versions import _current_series, current_version


@lru_cache(maxsize=4)
def _load_version(base: Path, version: str) -> ReadModel:
    """A published version never changes once its name is current, so a reader that asks again (every
    dashboard rerun, every poll) gets the frames it read before; the cache holds the last few versions."""
    folder = base / version
    manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
    if manifest.get("format") != FORMAT:
        raise ValueError(f"{folder}: read model format {manifest.get('format')!r}, expected {FORMAT}")
    status = json.loads((folder / "status.json").read_text(encoding="utf-8"))
    month_frames: dict[str, dict[str, pl.DataFrame]] = {}
    whole: dict[str, pl.DataFrame] = {}
    for name, paths in manifest["files"].items():
        if name in MONTH_TABLES:
            month_frames[name] = {
                Path(p).parent.name.removeprefix("month="): tables.conform(
                    pl.read_parquet(folder / p), MONTH_TABLES[name]
                )
                for p in paths
            }
        elif name in WHOLE_TABLES:
            whole[name] = tables.conform(pl.read_parquet(folder / paths[0]), WHOLE_TABLES[name])
    def refresh() -> tuple[Path, gpu_series.Index]:
        return _current_series(base) or (folder, {})

    buckets = ParquetSeries(folder, gpu_series.read_index(manifest), refresh)
    return ReadModel(version, datetime.fromisoformat(manifest["published_at"]), status, month_frames, whole, buckets)


def load_read_model(root: str | Path, *, attempts: int = 3) -> ReadModel:
    """The latest complete version under `root`. A version pruned while it was read is retried."""
    base = Path(root).resolve()
    for attempt in range(attempts):
        version = current_version(base)
        if version is None:
            raise NoReadModelError(f"{base}: no read model published yet (is `gpusteward serve` running?)")
        try:
            return _load_version(base, version)
        except FileNotFoundError:
            if attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


@contextmanager
def open_read_model(root: str | Path, *, read_only: bool = True) -> Iterator[ReadModel]:
    """`open_warehouse`'s shape, so loaders written for the warehouse read the read model instead."""
    if not read_only:
        raise ValueError("the read model is read-only; the service publishes it")
    yield load_read_model(root)
