"""Per-source watermarks for resumable backfills: how far each source's data is stored.

Functions take the `Warehouse` (this package owns its connection). Store a watermark only after
the batch it covers was ingested: a backfill that stops in between repeats that chunk, and ingest
is idempotent.
"""

from __future__ import annotations

from datetime import UTC, datetime

from warehouse.sql import run, scalar
from warehouse.store import Warehouse


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def get_watermark(wh: Warehouse, source: str) -> datetime | None:
    """The exclusive end of what is stored for `source`, or None when nothing is."""
    value = scalar(wh.connection, "SELECT watermark FROM watermarks WHERE source = ?", [source])
    return value if isinstance(value, datetime) else None


def set_watermark(wh: Warehouse, source: str, watermark: datetime) -> None:
    """Record that `source` is stored up to `watermark`; a watermark never moves backwards."""
    run(
        wh.connection,
        "INSERT INTO watermarks VALUES (?, ?, now()::TIMESTAMP) ON CONFLICT (source) DO UPDATE SET"
        " watermark = greatest(watermarks.watermark, excluded.watermark), updated_at = excluded.updated_at",
        [source, _naive(watermark)],
    )


def all_watermarks(wh: Warehouse) -> dict[str, datetime]:
    rows = run(wh.connection, "SELECT source, watermark FROM watermarks ORDER BY source")
    return {str(source): mark for source, mark in rows}
