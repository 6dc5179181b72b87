"""Import files into the warehouse with the project's own readers, one atomic batch per file."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from collectors.files import read_file, sort_for_import
from collectors.inference import WindowState
from collectors.inference_mappings import mapping_index
from gpusteward.config.limits import DEFAULT_LIMITS
from gpusteward.config.schema import Config
from gpusteward.errors import InputError
from warehouse import Warehouse


@dataclass
class ImportSummary:
    files_ok: int = 0
    rows_offered: dict[str, int] = field(default_factory=dict)
    rows_stored: dict[str, int] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)  # partial data: the rest of the file was stored
    errors: list[str] = field(default_factory=list)  # files that stored nothing

    def add(self, offered: dict[str, int], stored: dict[str, int]) -> None:
        for name, n in offered.items():
            self.rows_offered[name] = self.rows_offered.get(name, 0) + n
        for name, n in stored.items():
            self.rows_stored[name] = self.rows_stored.get(name, 0) + n


def expand(paths: Sequence[Path]) -> list[Path]:
    """Files given directly, and every file under the folders given (hidden files and manifest skipped)."""
    out: list[Path] = []
    for p in paths:
        if p.is_dir():
            out.extend(
                f
                for f in sorted(p.rglob("*"))
                if f.is_file() and not f.name.startswith(".") and f.name != "manifest.json"
            )
        else:
            out.append(p)
    return out


def import_files(
    wh: Warehouse,
    paths: Sequence[Path],
    *,
    on_file: Callable[[Path], None] | None = None,
    config: Config | None = None,
) -> ImportSummary:
    """Import each file as one batch. A bad file is recorded as a failed run and skipped; the
    files before and after it are stored. `config`: its `inference.mappings` join the built-ins."""
    summary = ImportSummary()
    state = WindowState()
    mappings = mapping_index(config)
    limits = config.limits if config is not None else DEFAULT_LIMITS
    for path in sort_for_import(expand(paths), mappings=mappings):
        try:
            batch = read_file(path, inference_state=state, mappings=mappings, limits=limits)
            result = wh.ingest(str(path), batch.frames, [str(p) for p in batch.problems])
        except InputError as exc:
            summary.errors.append(str(exc))
            wh.record_failed_import(str(path), str(exc))
        except OSError as exc:
            message = f"{path}: cannot read the file: {exc.strerror or exc}"
            summary.errors.append(message)
            wh.record_failed_import(str(path), message)
        else:
            summary.files_ok += 1
            summary.add(result.offered, result.stored)
            summary.problems.extend(str(p) for p in batch.problems)
        if on_file is not None:
            on_file(path)
    return summary
