"""Incremental collection: each source remembers how far it has collected (its watermark).

The next window starts `overlap` before the watermark, because a job that was running or pending
at the last collection changes later; the warehouse upserts jobs by (cluster, job_id, submit_time),
so collecting a window twice stores each record once. The store is a small JSON file here (a
`Watermarks` protocol, so the warehouse can keep them instead).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Protocol

from gpusteward.errors import InputError


class Watermarks(Protocol):
    def get(self, source: str) -> datetime | None: ...

    def set(self, source: str, until: datetime) -> None: ...


@dataclass(frozen=True)
class Window:
    start: datetime
    end: datetime


def next_window(
    watermark: datetime | None,
    now: datetime,
    *,
    overlap: timedelta = timedelta(hours=2),
    first: timedelta = timedelta(days=1),
) -> Window:
    """The window to collect now: from `overlap` before the watermark (or `first` before now) to now."""
    start = now - first if watermark is None else min(watermark, now) - overlap
    return Window(start, now)


@dataclass
class FileWatermarks:
    """Watermarks in a JSON file `{source: "YYYY-MM-DDTHH:MM:SS"}`, replaced atomically on each set."""

    path: Path

    def _load(self) -> dict[str, str]:
        if not self.path.exists():
            return {}
        try:
            data = json.loads(self.path.read_text())
        except json.JSONDecodeError as exc:
            raise InputError(str(self.path), f"not valid JSON: {exc.msg}", line=exc.lineno) from None
        if not isinstance(data, dict):
            raise InputError(str(self.path), "expected a JSON object of source -> time")
        return {str(k): str(v) for k, v in data.items()}

    def get(self, source: str) -> datetime | None:
        value = self._load().get(source)
        return datetime.fromisoformat(value) if value else None

    def set(self, source: str, until: datetime) -> None:
        data = self._load() | {source: until.isoformat(timespec="seconds")}
        tmp = self.path.with_suffix(self.path.suffix + ".tmp")
        tmp.write_text(json.dumps(data, indent=1, sort_keys=True))
        os.replace(tmp, self.path)
