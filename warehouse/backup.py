"""A copy of the warehouse file before a migration changes it (docs/deploy.md#upgrades).

A migration runs when a newer GPU Steward opens the warehouse for writing (the service's start, an
import). If a migration goes wrong, or the new version has to be rolled back, the copy is the way
back: the older version reads it as it was. The copy is a plain file copy made after a CHECKPOINT,
while this process holds DuckDB's write lock, so nothing writes the file during the copy.
"""

from __future__ import annotations

import logging
import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

import duckdb

from warehouse.sql import run

log = logging.getLogger("gpusteward.warehouse")

SKIP_ENV = "GPUSTEWARD_SKIP_MIGRATION_BACKUP"
"""Set to 1 where the file is backed up another way (a volume snapshot) or too big to copy."""


def backup_path(path: Path, before: int, at: datetime) -> Path:
    """`<file>.before-<NNN>.<UTC stamp>.bak`: which migration came next, and when the copy was made."""
    stamp = at.astimezone(UTC).strftime("%Y%m%dT%H%M%SZ")
    candidate = path.with_name(f"{path.name}.before-{before:03d}.{stamp}.bak")
    n = 1
    while candidate.exists():  # two upgrades within a second (tests, a retried start) keep both copies
        n += 1
        candidate = path.with_name(f"{path.name}.before-{before:03d}.{stamp}-{n}.bak")
    return candidate


def backup_before_migrating(
    con: duckdb.DuckDBPyConnection, path: Path, before: int, *, at: datetime | None = None,
    env: dict[str, str] | None = None,
) -> Path | None:
    """Copy the warehouse file next to itself before migration `before` is applied; return the copy.

    None when `GPUSTEWARD_SKIP_MIGRATION_BACKUP=1` says not to. Refuses (OSError) when the disk
    cannot hold the copy: migrating without the copy the operator expects is the worse outcome.
    """
    env = dict(os.environ) if env is None else env
    if env.get(SKIP_ENV, "").strip().lower() in ("1", "true", "yes"):
        log.warning("%s: migrating without a backup (%s is set)", path, SKIP_ENV)
        return None
    run(con, "CHECKPOINT")  # everything in the WAL goes into the file, so the file alone is the database
    size = path.stat().st_size
    free = shutil.disk_usage(path.parent).free
    if free < size:
        raise OSError(
            f"{path}: a migration is pending and its backup needs {size:,} bytes, but only {free:,} are free "
            f"in {path.parent}; free some space, or back the file up yourself and set {SKIP_ENV}=1"
        )
    target = backup_path(path, before, at or datetime.now(UTC))
    partial = target.with_name(target.name + ".partial")
    shutil.copyfile(path, partial)
    with partial.open("rb") as f:
        os.fsync(f.fileno())
    partial.rename(target)  # a crash mid-copy leaves a .partial, never a truncated .bak
    log.info("%s: backed up to %s before applying migration %03d", path, target, before)
    return target
