"""Publishing: a version written to a hidden folder, renamed into place, then named in CURRENT; older
versions pruned. The layout is in warehouse/readmodel/__init__.py."""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime
from pathlib import Path

import polars as pl

from warehouse import gpu_series
from warehouse.readmodel.model import ReadModel
from warehouse.readmodel.tables import CURRENT, FORMAT, KEEP


def _version_name(published_at: datetime, root: Path) -> str:
    base = "v" + published_at.strftime("%Y%m%dT%H%M%S%f")
    n = 0
    while (root / f"{base}-{n}").exists():
        n += 1
    return f"{base}-{n}"


def _write(frame: pl.DataFrame, path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    frame.write_parquet(path)
    return path.as_posix()


def publish(model: ReadModel, root: str | Path) -> str:
    """Write `model` as a new version under `root` and make it current; return the version name."""
    base = Path(root)
    base.mkdir(parents=True, exist_ok=True)
    version = _version_name(model.published_at, base)
    tmp = base / f".tmp-{version}"
    tmp.mkdir()
    files: dict[str, list[str]] = {}
    previous = _current_series(base)
    try:
        for name, by_month in model.month_frames.items():
            files[name] = [
                _write(frame, tmp / name / f"month={m}" / "part-0.parquet").removeprefix(tmp.as_posix() + "/")
                for m, frame in sorted(by_month.items())
            ]
        for name, frame in model.whole.items():
            files[name] = [_write(frame, tmp / name / "part-0.parquet").removeprefix(tmp.as_posix() + "/")]
        written = gpu_series.write_series(model.series, tmp, previous)
        (tmp / "status.json").write_text(json.dumps(model.status_info, default=str), encoding="utf-8")
        manifest = {
            "format": FORMAT,
            "version": version,
            "published_at": model.published_at.isoformat(),
            "months": [str(m) for m in model.months()],
            "files": files,
            gpu_series.TABLE: {"days": written.index, "computed": written.computed, "linked": written.linked},
        }
        (tmp / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
        os.rename(tmp, base / version)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    pointer = base / f"{CURRENT}.tmp"
    pointer.write_text(version + "\n", encoding="utf-8")
    os.replace(pointer, base / CURRENT)
    _prune(base, version)
    return version


def _current_series(base: Path) -> tuple[Path, gpu_series.Index] | None:
    """The current version's folder and GPU bucket index, whose unchanged days the next version links."""
    version = current_version(base)
    if version is None:
        return None
    try:
        manifest = json.loads((base / version / "manifest.json").read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    return base / version, gpu_series.read_index(manifest)


def _prune(base: Path, current: str) -> None:
    versions = sorted(p.name for p in base.iterdir() if p.is_dir() and p.name.startswith("v"))
    for name in versions[:-KEEP]:
        if name != current:
            shutil.rmtree(base / name, ignore_errors=True)
    for stale in base.glob(".tmp-*"):
        if stale.is_dir() and stale.name != f".tmp-{current}":
            shutil.rmtree(stale, ignore_errors=True)


def current_version(root: str | Path) -> str | None:
    pointer = Path(root) / CURRENT
    try:
        return pointer.read_text(encoding="utf-8").strip() or None
    except FileNotFoundError:
        return None
