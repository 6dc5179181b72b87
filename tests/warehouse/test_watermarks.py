from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from warehouse import Warehouse, open_warehouse
from warehouse.watermarks import all_watermarks, get_watermark, set_watermark


def test_watermarks_round_trip_and_never_move_back(wh: Warehouse) -> None:
    assert get_watermark(wh, "promapi:x") is None
    set_watermark(wh, "promapi:x", datetime(2026, 10, 2))
    set_watermark(wh, "promapi:x", datetime(2026, 10, 1))  # an older chunk stored again
    set_watermark(wh, "promapi:y", datetime(2026, 10, 3, 8, tzinfo=UTC))
    assert get_watermark(wh, "promapi:x") == datetime(2026, 10, 2)
    assert all_watermarks(wh) == {"promapi:x": datetime(2026, 10, 2), "promapi:y": datetime(2026, 10, 3, 8)}


def test_watermarks_survive_reopening(db_path: Path) -> None:
    with open_warehouse(db_path) as w:
        set_watermark(w, "s", datetime(2026, 10, 5))
    with open_warehouse(db_path) as w:
        assert get_watermark(w, "s") == datetime(2026, 10, 5)
