"""Incremental collection: each source remembers how far it has collected (its watermark).

The next window starts `overlap` before the watermark, because a job that was running or pending
at the last collection changes later; the warehouse upserts jobs by (cluster, job_id, submit_time),
so collecting a window twice stores each record once. The warehouse keeps the watermarks
(warehouse/watermarks.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta


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
