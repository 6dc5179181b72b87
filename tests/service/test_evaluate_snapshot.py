"""The service's evaluation reads a snapshot without the write lock: rows stored meanwhile are not in its
inputs but call for the next evaluation, and a failed evaluation is due again."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from gpusteward.config import example_config_path, load_config
from service import tasks
from service.pipeline import Assessment, assess
from service.tasks import Evaluate, Shared
from tests.service.spool_batches import minute_batch
from warehouse import Warehouse, open_warehouse

T0 = datetime(2026, 10, 2, 8, 0, tzinfo=UTC)
NOW = datetime(2026, 10, 3, tzinfo=UTC)


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with open_warehouse(tmp_path / "w.duckdb") as opened:
        for i in range(3):
            batch = minute_batch(T0 + timedelta(minutes=i))
            opened.ingest(batch.source, batch.frames)
        yield opened


def test_rows_stored_during_an_evaluation_are_not_in_it_and_call_for_the_next(
    wh: Warehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = threading.RLock()
    shared = Shared(dirty=True)
    seen: list[tuple[int, int]] = []

    def meanwhile(view: Warehouse, config: Any, month: Any) -> Assessment:
        def drain() -> None:  # the writer lane, storing a scrape while the evaluation computes
            with lock:
                batch = minute_batch(T0 + timedelta(minutes=10))
                wh.ingest(batch.source, batch.frames)
                shared.dirty = True

        writer = threading.Thread(target=drain)
        writer.start()
        writer.join(30)
        assert not writer.is_alive(), "the writer waited for the evaluation's lock"
        seen.append((view.count("gpu_minutes"), wh.count("gpu_minutes")))
        return assess(view, config, month)

    monkeypatch.setattr(tasks, "assess", meanwhile)
    job = Evaluate(load_config(example_config_path()), wh, shared, lock=lock)
    result = job.run(NOW)
    assert result.wrote
    assert seen == [(24, 32)]  # the snapshot kept its three minutes; the warehouse has the fourth
    assert shared.dirty  # the fourth minute calls for the next evaluation
    assert [str(m) for m in wh.months()] == ["2026-10"]


def test_a_failed_evaluation_is_due_again(wh: Warehouse, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = Shared(dirty=True)

    def broken(*_args: Any) -> Assessment:
        raise RuntimeError("evaluator bug")

    monkeypatch.setattr(tasks, "assess", broken)
    job = Evaluate(load_config(example_config_path()), wh, shared)
    with pytest.raises(RuntimeError, match="evaluator bug"):
        job.run(NOW)
    assert shared.dirty
    monkeypatch.setattr(tasks, "assess", assess)
    assert job.run(NOW).wrote
    assert not shared.dirty
