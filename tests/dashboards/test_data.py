from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from dashboards.data import NoMonthError, load_overview, newest_row
from gpusteward.domain import Month
from sla.outputs import MonthOutputs
from tests.reports.fixtures import MONTH, demo_outputs, with_frames
from warehouse import open_warehouse

CONFIG = """
apiVersion = "gpusteward/v1"
[[clusters]]
name = "east"
gpus = 32
[[clusters]]
name = "west"
gpus = 32
[teams.vision]
display_name = "Vision"
entitled_share = 0.5
[teams.research]
entitled_share = 0.5
"""

ALERTS = pl.DataFrame(
    {
        "fingerprint": ["f1", "f2"],
        "line": ["inference_reserve", "inference_reserve"],
        "subject": ["east", "east"],
        "status": ["resolved", "firing"],
        "severity": ["critical", "critical"],
        "starts_at": [datetime(2026, 11, 12, 10, 5), datetime(2026, 11, 30, 22, 0)],
        "ends_at": [datetime(2026, 11, 12, 11, 20), None],
        "summary": ["past", "now"],
    }
)


class FakeWarehouse:
    def __init__(self, months: list[Month]) -> None:
        self._months = months
        self.asked: list[Month] = []

    def months(self) -> list[Month]:
        return self._months

    def month_outputs(self, month: Month) -> MonthOutputs:
        self.asked.append(month)
        return demo_outputs()

    def status(self) -> dict[str, Any]:
        return {"tables": {"gpu_minutes": {"rows": 10, "min_ts": "2026-11-01T00:00:00",
                                           "max_ts": "2026-11-30T23:59:00"},
                           "jobs": {"rows": 2, "min_ts": None, "max_ts": None}},
                "completeness": []}

    def alerts(self, month: Month | None = None) -> pl.DataFrame:
        return ALERTS


def _opener(wh: FakeWarehouse, calls: list[dict[str, Any]]) -> Any:
    @contextmanager
    def opener(path: str | Path, **kwargs: Any) -> Iterator[FakeWarehouse]:
        calls.append({"path": path, **kwargs})
        yield wh

    return opener


@pytest.fixture
def config_path(tmp_path: Path) -> Path:
    path = tmp_path / "gpusteward.toml"
    path.write_text(CONFIG, encoding="utf-8")
    return path


def test_loads_the_newest_month_read_only(config_path: Path) -> None:
    wh, calls = FakeWarehouse([Month(2026, 10), MONTH]), list[dict[str, Any]]()
    now = datetime(2026, 12, 1, 2, 14, tzinfo=UTC)
    data = load_overview("w.duckdb", config_path, now=now, opener=_opener(wh, calls))
    assert calls == [{"path": "w.duckdb", "read_only": True}]
    assert data.month == MONTH
    assert wh.asked == [MONTH]
    assert [a["fingerprint"] for a in data.alerts] == ["f2"]
    assert data.data_as_of == datetime(2026, 11, 30, 23, 59)
    assert data.data_age == timedelta(hours=2, minutes=15)
    assert data.team_names == {"vision": "Vision", "research": "research"}
    assert data.pool_gpus == 64
    assert data.months == (Month(2026, 10), MONTH)


def test_asks_for_the_month_it_is_given(config_path: Path) -> None:
    wh = FakeWarehouse([Month(2026, 10), MONTH])
    data = load_overview("w.duckdb", config_path, Month(2026, 10), opener=_opener(wh, []))
    assert data.month == Month(2026, 10)
    with pytest.raises(NoMonthError, match="2026-09"):
        load_overview("w.duckdb", config_path, Month(2026, 9), opener=_opener(wh, []))


def test_an_unevaluated_warehouse_says_so() -> None:
    with pytest.raises(NoMonthError, match="no evaluated month"):
        load_overview("w.duckdb", None, opener=_opener(FakeWarehouse([]), []))


def test_newest_row_ignores_missing_and_bad_stamps() -> None:
    assert newest_row({}) is None
    assert newest_row({"tables": {"a": {"max_ts": "garbage"}, "b": {"max_ts": None}}}) is None
    status = {"tables": {"a": {"max_ts": "2026-11-30T10:00:00+08:00"}, "b": {"max_ts": datetime(2026, 11, 30, 1)}}}
    assert newest_row(status) == datetime(2026, 11, 30, 2)


def test_reads_a_real_warehouse(tmp_path: Path, config_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    outputs = demo_outputs()
    # Stored without util_source: the loader is under test here, not the warehouse's round trip of every column.
    stored = with_frames(outputs, idle=outputs.idle.drop("util_source"))
    with open_warehouse(db) as wh:
        wh.store_month_outputs(stored)
        wh.record_alerts(MONTH, ALERTS.to_dicts())
    data = load_overview(db, config_path)
    assert data.month == MONTH
    assert [a["fingerprint"] for a in data.alerts] == ["f2"]
    assert data.outputs.results.height == outputs.results.height
    assert data.outputs.idle["idle_held_minutes"].sum() == outputs.idle["idle_held_minutes"].sum()
