"""`evaluate(..., now=...)`: the quota plan's creation time comes from the caller's clock (a test, a
screenshot) instead of the wall clock."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from gpusteward.config import load_config_text
from gpusteward.domain import Month
from service.pipeline import evaluate
from warehouse import open_warehouse


def test_the_plan_is_created_at_the_moment_given(tmp_path: Path) -> None:
    moment = datetime(2026, 11, 1, 0, 0, tzinfo=UTC)
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        evaluate(wh, load_config_text(""), Month(2026, 10), now=moment)
        created = wh.plans(Month(2026, 10))["created_at"].to_list()
    assert len(created) == 1
    assert created[0].replace(tzinfo=created[0].tzinfo or UTC) == moment
