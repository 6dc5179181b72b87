"""Import files into the warehouse with the project's own readers, one atomic batch per file.

A file that cannot be read (bad input, a row the warehouse refuses, or any unexpected error of a
reader) stores nothing, is quarantined with its reason and never stops the other files: quarantine,
not blockage (docs/service.md#quarantine). An I/O error is recorded but not quarantined (the
content is not to blame); a failure of the warehouse's own storage (a full disk) fails the run.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from fnmatch import fnmatchcase
from pathlib import Path, PurePath

from collectors.files import read_file, sort_for_import
from collectors.inference import WindowState
from collectors.inference_mappings import DEFAULT_INDEX, MappingIndex, mapping_index
from gpusteward.config.limits import DEFAULT_LIMITS, LimitsConfig
from gpusteward.config.schema import Config
from gpusteward.config.service import DEFAULT_IMPORT_IGNORE
from gpusteward.errors import InputError, StewardError
from warehouse import FileSignature, IngestResult, Quarantined, Warehouse


@dataclass
class ImportSummary:
    files_ok: int = 0
    rows_offered: dict[str, int] = field(default_factory=dict)
    rows_stored: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # partial data: the rest of the file was stored
    errors: list[str] = field(default_factory=list)  # files that stored nothing
    failed: list[Path] = field(default_factory=list)  # those files

    def add(self, offered: dict[str, int], stored: dict[str, int]) -> None:
        for name, n in offered.items():
            self.rows_offered[name] = self.rows_offered.get(name, 0) + n
        for name, n in stored.items():
            self.rows_stored[name] = self.rows_stored.get(name, 0) + n


@dataclass(frozen=True)
class FileOutcome:
    """What importing one file did: stored (`result`), or stored nothing (`error`)."""

    path: Path
    result: IngestResult | None = None
    problems: tuple[str, ...] = ()
    error: str | None = None
    quarantined: bool = False  # newly quarantined by this read (not: skipped as already quarantined)


def ignored(relative: PurePath, patterns: Iterable[str]) -> bool:
    """True when a pattern matches the file's name or the name of a folder on its way (case-sensitive globs)."""
    globs = tuple(patterns)
    return any(fnmatchcase(part, glob) for part in relative.parts for glob in globs)


def expand(paths: Sequence[Path], *, ignore: Iterable[str] = DEFAULT_IMPORT_IGNORE) -> list[Path]:
    """Files given directly, and every file under the folders given that no `ignore` pattern matches."""
    patterns = tuple(ignore)
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(f for f in sorted(p.rglob("*")) if f.is_file() and not ignored(f.relative_to(p), patterns))
        else:
            out.append(p)
    return out


def ignore_patterns(config: Config | None, extra: Iterable[str] = ()) -> tuple[str, ...]:
    """The config's `service.import_ignore` (or the defaults) and `extra`."""
    base = config.service.import_ignore if config is not None else DEFAULT_IMPORT_IGNORE
    return (*base, *extra)


def content_sha256(path: Path) -> str:
    with path.open("rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def describe_failure(path: Path, exc: Exception) -> str:
    """One line naming the file and why it stored nothing."""
    if isinstance(exc, InputError):
        return str(exc)
    if isinstance(exc, OSError):
        return f"{path}: cannot read the file: {exc.strerror or exc}"
    return f"{path}: unexpected {type(exc).__name__} while reading it: {exc} (please report this with the file)"


def import_one(
    wh: Warehouse,
    path: Path,
    *,
    source: str,
    state: WindowState,
    mappings: MappingIndex = DEFAULT_INDEX,
    limits: LimitsConfig = DEFAULT_LIMITS,
    signature: FileSignature | None = None,
    retry: bool = False,
    now: datetime | None = None,
) -> FileOutcome:
    """Read and store `path` in one transaction; any failure is contained to this file and quarantines it.

    A file whose content is quarantined is not read again (unless `retry`); `signature` is recorded
    with the outcome, so a restarted service does not look at an unchanged file again. Sample times
    are judged against `now` (the wall clock when None) within `limits`."""
    try:
        digest, size = content_sha256(path), path.stat().st_size
    except OSError as exc:
        message = describe_failure(path, exc)
        wh.record_failed_import(str(path), message, file=signature)
        return FileOutcome(path, error=message)
    if not retry and (entry := wh.quarantine_entry(path.name, digest)) is not None:
        if signature is not None:
            wh.remember_skipped(signature)
        message = (
            f"{path}: quarantined since {entry['first_seen']:%Y-%m-%d %H:%M} UTC and not read again: {entry['reason']}"
            f" (fix the file, or read it again unchanged with `gpusteward import --retry {path}`)"
        )
        return FileOutcome(path, error=message)
    try:
        batch = read_file(path, inference_state=state, mappings=mappings, limits=limits, now=now)
        problems = tuple(str(p) for p in batch.problems)
        result = wh.ingest(str(path), batch.frames, problems, file=signature, unquarantine=(str(path), digest))
    except Exception as exc:  # any failure stays with its file
        if _from_the_warehouse(exc):
            raise  # the warehouse's own storage failed (a full disk): not the file's fault; the job runs again
        message = describe_failure(path, exc)
        if isinstance(exc, OSError):  # I/O, not content: recorded, read again once the file changes
            wh.record_failed_import(str(path), message, file=signature)
            return FileOutcome(path, error=message)
        record = Quarantined(path.name, digest, str(path), size, message, type(exc).__name__, source)
        wh.record_failed_import(str(path), message, file=signature, quarantined=record)
        return FileOutcome(path, error=message, quarantined=True)
    return FileOutcome(path, result=result, problems=problems)


def _from_the_warehouse(exc: BaseException) -> bool:
    """An error of the warehouse's own storage (DuckDB's). Rows it refuses come as InputError."""
    return not isinstance(exc, StewardError) and type(exc).__module__.split(".")[0] in {"duckdb", "_duckdb"}


def import_files(
    wh: Warehouse,
    paths: Sequence[Path],
    *,
    on_file: Callable[[Path], None] | None = None,
    config: Config | None = None,
    ignore: Iterable[str] | None = None,
    retry: bool = False,
) -> ImportSummary:
    """Import each file as one batch. A bad file is quarantined and skipped; the files before and
    after it are stored. `config`: its `inference.mappings` join the built-ins, its
    `service.import_ignore` patterns (or `ignore`) choose the files of folders. `retry`: read
    quarantined files again."""
    summary = ImportSummary()
    state = WindowState()
    mappings = mapping_index(config)
    limits = config.limits if config is not None else DEFAULT_LIMITS
    patterns = ignore_patterns(config) if ignore is None else tuple(ignore)
    for path in sort_for_import(expand(paths, ignore=patterns), mappings=mappings):
        outcome = import_one(wh, path, source="import", state=state, mappings=mappings, limits=limits, retry=retry)
        if outcome.result is None:
            summary.errors.append(outcome.error or f"{path}: stored nothing")
            summary.failed.append(path)
        else:
            summary.files_ok += 1
            summary.add(outcome.result.offered, outcome.result.stored)
            summary.problems.extend(outcome.problems)
        if on_file is not None:
            on_file(path)
    return summary
