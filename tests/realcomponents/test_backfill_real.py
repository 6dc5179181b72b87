"""The Prometheus-API backfill against real servers equals the direct import of the same files."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from collectors.backfill import backfill
from collectors.promapi import CLOSED, LEFT_OPEN, PromClient
from gpusteward.domain import Month
from service.importer import import_files
from tests.realcomponents.conftest import DAYS, START, dcgm_files
from warehouse import open_warehouse
from warehouse.watermarks import get_watermark, set_watermark

BEGIN = datetime(START.year, START.month, START.day)
END = BEGIN + timedelta(days=DAYS)
MONTH = Month.parse(f"{START.year}-{START.month:02d}")


@pytest.fixture(scope="session")
def direct(sim_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    with open_warehouse(tmp_path_factory.mktemp("direct") / "w.duckdb") as wh:
        summary = import_files(wh, dcgm_files(sim_dir))
        assert not summary.errors
        return wh.evaluation_inputs(MONTH).gpu_minutes


def fill_from_api(url: str, db: Path, *, stop_after: int | None = None) -> pl.DataFrame:
    """Backfill in chunks of 1,000 minutes, storing each chunk and then its watermark."""
    source = f"promapi:{url}"
    with PromClient(url) as client, open_warehouse(db) as wh:
        convention = client.flavor()
        chunks = backfill(
            client, BEGIN, END, convention=convention, watermark=get_watermark(wh, source), chunk_minutes=1000
        )
        for done, chunk in enumerate(chunks):
            if stop_after is not None and done == stop_after:
                break
            wh.ingest(source, chunk.batch.frames, [str(p) for p in chunk.batch.problems])
            set_watermark(wh, source, chunk.end)
        return wh.evaluation_inputs(MONTH).gpu_minutes


@pytest.mark.parametrize("server", ["prometheus_url", "victoria_url"])
def test_api_backfill_equals_direct_import(
    server: str, direct: pl.DataFrame, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    url = request.getfixturevalue(server)
    db = tmp_path / "api.duckdb"
    partial = fill_from_api(url, db, stop_after=1)  # stopped after the first chunk ...
    assert 0 < partial.height < direct.height
    resumed = fill_from_api(url, db)  # ... resumed from its watermark
    assert_frame_equal(resumed, direct)


def test_window_conventions_are_detected(prometheus_url: str, victoria_url: str) -> None:
    with PromClient(prometheus_url) as p, PromClient(victoria_url) as v:
        assert (p.flavor(), v.flavor()) == (CLOSED, LEFT_OPEN)
