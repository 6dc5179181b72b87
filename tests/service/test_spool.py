"""The collection spool: durable appends, torn and corrupt files never read as data, and a drain that
stores each acknowledged batch exactly once, however often it is replayed."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from collectors.batch import Problem
from service.collection import DrainSpool
from service.metrics import ServiceMetrics
from service.spool import BATCH, CORRUPT, PARTIAL, Spool, SpoolCorruptError, decode, encode, spool_beside
from service.tasks import Shared
from tests.service.spool_batches import SOURCE, minute_batch
from warehouse import SpoolBatchId, Warehouse, open_warehouse

T0 = datetime(2026, 10, 2, 8, 0, tzinfo=UTC)


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with open_warehouse(tmp_path / "w.duckdb") as opened:
        yield opened


def _drain(spool: Spool, wh: Warehouse) -> DrainSpool:
    return DrainSpool(spool, wh, Shared(dirty=False), ServiceMetrics())


def test_a_batch_reads_back_as_it_was_appended(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    batch = minute_batch(T0)
    batch.problems.append(Problem("node-9", "connection refused"))
    batch_id = spool.append(batch, T0)
    [path] = spool.pending()
    assert path.name == f"{batch_id}{BATCH}"
    back = spool.read(path)
    assert (back.batch_id, back.source, back.collected_at) == (batch_id, SOURCE, T0)
    assert back.problems == ("node-9: connection refused",)
    assert back.frames["gpu_minutes"].equals(batch.frames["gpu_minutes"])
    assert back.frames["gpu_minutes"].schema == batch.frames["gpu_minutes"].schema


def test_batches_drain_in_append_order_and_ids_never_repeat(tmp_path: Path) -> None:
    spool = Spool(tmp_path / "spool")
    ids = [spool.append(minute_batch(T0 + timedelta(minutes=i)), T0) for i in range(5)]
    assert [p.name.removesuffix(BATCH) for p in spool.pending()] == ids
    again = Spool(tmp_path / "spool")  # a restarted service appends after what is waiting
    later = again.append(minute_batch(T0), T0)
    assert later not in ids
    assert again.pending()[-1].name == f"{later}{BATCH}"


def test_an_unfinished_write_of_a_crash_is_dropped_when_the_spool_opens(tmp_path: Path) -> None:
    folder = tmp_path / "spool"
    spool = Spool(folder)
    kept = spool.append(minute_batch(T0), T0)
    torn = folder / f"99999999999999999999-torn{PARTIAL}"
    torn.write_bytes(encode({"id": "torn"}, minute_batch(T0).frames)[:100])  # the append never returned
    reopened = Spool(folder)
    assert reopened.dropped_partial == 1
    assert not torn.exists()
    assert [p.name for p in reopened.pending()] == [f"{kept}{BATCH}"]


@settings(max_examples=60, deadline=None)
@given(cut=st.integers(min_value=0), flip=st.integers(min_value=0))
def test_a_torn_or_altered_batch_is_refused_never_misread(cut: int, flip: int) -> None:
    whole = encode({"id": "b", "source": SOURCE, "collected_at": T0.isoformat()}, minute_batch(T0).frames)
    header, frames = decode(whole, "whole")
    assert header["id"] == "b"
    assert frames["gpu_minutes"].height == 8
    short = whole[: cut % len(whole)]
    with pytest.raises(SpoolCorruptError):
        decode(short, "torn")
    at = flip % len(whole)
    altered = whole[:at] + bytes([whole[at] ^ 0x40]) + whole[at + 1 :]
    with pytest.raises(SpoolCorruptError):
        decode(altered, "altered")


def test_the_drain_stores_each_batch_once_and_empties_the_spool(tmp_path: Path, wh: Warehouse) -> None:
    spool = Spool(tmp_path / "spool")
    for i in range(3):
        spool.append(minute_batch(T0 + timedelta(minutes=i)), T0 + timedelta(minutes=i, seconds=30))
    result = _drain(spool, wh).run(T0)
    assert result.wrote
    assert result.rows == {"gpu_minutes": 24}
    assert spool.pending() == []
    assert wh.count("gpu_minutes") == 24
    assert wh.query("SELECT count(*) AS n FROM spool_batches")["n"][0] == 3
    assert _drain(spool, wh).run(T0).wrote is False


def test_a_batch_replayed_after_its_commit_is_not_stored_again(tmp_path: Path, wh: Warehouse) -> None:
    """The crash window between the warehouse's commit and the file's removal: the file is drained again."""
    spool = Spool(tmp_path / "spool")
    spool.append(minute_batch(T0), T0)
    [path] = spool.pending()
    copy = path.read_bytes()
    _drain(spool, wh).run(T0)
    path.write_bytes(copy)  # as if the process died before it removed the file
    runs_before = wh.count("import_runs")
    metrics = ServiceMetrics()
    result = DrainSpool(spool, wh, Shared(dirty=False), metrics).run(T0)
    assert result.rows == {}
    assert spool.pending() == []
    assert wh.count("gpu_minutes") == 8
    assert wh.count("import_runs") == runs_before  # no second run recorded either
    assert metrics.registry.get_sample_value("gpusteward_spool_drained_total", {"outcome": "replayed"}) == 1


def test_the_batch_id_is_recorded_in_the_same_transaction_as_its_rows(wh: Warehouse) -> None:
    batch = minute_batch(T0)
    mark = SpoolBatchId("00000000000000000001-abc", T0)
    first = wh.ingest(batch.source, batch.frames, spool_batch=mark)
    second = wh.ingest(batch.source, batch.frames, spool_batch=mark)
    assert first.stored == {"gpu_minutes": 8}
    assert not first.replayed
    assert second.replayed
    assert second.stored == {}
    row = wh.query("SELECT batch_id, source, collected_at FROM spool_batches").row(0)
    assert row == ("00000000000000000001-abc", SOURCE, T0.replace(tzinfo=None))


def test_a_corrupt_batch_is_set_aside_and_the_others_are_stored(tmp_path: Path, wh: Warehouse) -> None:
    spool = Spool(tmp_path / "spool")
    for i in range(3):
        spool.append(minute_batch(T0 + timedelta(minutes=i)), T0)
    middle = spool.pending()[1]
    data = bytearray(middle.read_bytes())
    data[-5] ^= 0xFF  # bit rot inside the Arrow payload
    middle.write_bytes(bytes(data))
    metrics = ServiceMetrics()
    DrainSpool(spool, wh, Shared(dirty=False), metrics).run(T0)
    assert spool.pending() == []
    assert [p.name for p in (tmp_path / "spool" / CORRUPT).iterdir()] == [middle.name]
    assert wh.count("gpu_minutes") == 16
    assert metrics.registry.get_sample_value("gpusteward_spool_drained_total", {"outcome": "corrupt"}) == 1


def test_rows_the_warehouse_refuses_are_set_aside_with_a_failed_run(tmp_path: Path, wh: Warehouse) -> None:
    spool = Spool(tmp_path / "spool")
    bad = minute_batch(T0)
    bad.frames["gpu_minutes"] = bad.frames["gpu_minutes"].with_columns(pl.lit(None, pl.Utf8).alias("host"))
    spool.append(bad, T0)
    spool.append(minute_batch(T0 + timedelta(minutes=1)), T0)
    DrainSpool(spool, wh, Shared(dirty=False), ServiceMetrics()).run(T0)
    assert spool.pending() == []
    assert len(list((tmp_path / "spool" / CORRUPT).iterdir())) == 1
    assert wh.count("gpu_minutes") == 8
    assert "failed" in wh.query("SELECT status FROM import_runs")["status"].to_list()


def test_the_default_spool_sits_beside_its_warehouse(tmp_path: Path) -> None:
    assert spool_beside(tmp_path / "gpusteward.duckdb") == tmp_path / "gpusteward.duckdb.spool"
