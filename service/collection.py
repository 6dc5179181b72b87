"""Live collection through the spool: scrapes never wait for the warehouse.

`LiveCollect` runs a `LiveSource` on its interval and appends what it read to the spool
(service/spool.py); the append returns once the batch is on disk, which is the acknowledgement.
It holds no lock and touches no warehouse, so a long evaluation or review cannot delay it.
`DrainSpool` is the single writer's side: it stores each acknowledged batch, oldest first, in one
transaction with its batch id, then removes the file. The write lock is held per batch, so a
control action waits for at most one batch, never for the whole backlog.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import ClassVar

from gpusteward.errors import InputError
from service.jobs import JobResult
from service.metrics import ServiceMetrics
from service.spool import Spool, SpoolCorruptError
from service.tasks import LiveSource, Shared
from warehouse import SpoolBatchId, Warehouse


@dataclass
class LiveCollect:
    """Run a `LiveSource` on its interval and spool what it returns as one batch (durable on return)."""

    source: LiveSource
    interval: timedelta
    spool: Spool
    metrics: ServiceMetrics
    on_spooled: Callable[[], None] | None = None  # wakes the writer's drain
    locks_itself: ClassVar[bool] = True  # takes no lock at all: collection never waits for the writer

    @property
    def name(self) -> str:
        return f"collect:{self.source.name}"

    def run(self, now: datetime) -> JobResult:
        try:
            batch = self.source.collect(now)
        except Exception:
            self.metrics.collection(self.source.name, ok=False)
            raise
        batch_id = self.spool.append(batch, now)
        self.metrics.collection(self.source.name, ok=True)
        self.metrics.spool_waiting.inc()
        if self.on_spooled is not None:
            self.on_spooled()
        return JobResult(detail=f"{sum(batch.rows.values())} rows spooled as {batch_id}")  # counted when stored


@dataclass
class DrainSpool:
    """Store the spool's acknowledged batches in the warehouse, each once, oldest first."""

    spool: Spool
    wh: Warehouse
    shared: Shared
    metrics: ServiceMetrics
    lock: AbstractContextManager[object] = field(default_factory=threading.RLock)  # the service's write lock
    interval: timedelta = timedelta(seconds=10)  # a fallback: every append wakes the drain
    name: str = "drain"
    locks_itself: ClassVar[bool] = True  # one batch per hold of the write lock

    def run(self, now: datetime) -> JobResult:  # noqa: ARG002 - a batch carries its own collection time
        rows: dict[str, int] = {}
        stored = replayed = refused = 0
        for path in self.spool.pending():
            try:
                batch = self.spool.read(path)
            except SpoolCorruptError as exc:
                self.spool.quarantine(path, str(exc))
                self.metrics.spool_outcomes.labels("corrupt").inc()
                refused += 1
                continue
            mark = SpoolBatchId(batch.batch_id, batch.collected_at)
            try:
                with self.lock:
                    result = self.wh.ingest(batch.source, batch.frames, batch.problems, spool_batch=mark)
                    if any(result.stored.values()):
                        self.shared.dirty = True
            except InputError as exc:  # rows the warehouse refuses will never fit: keep them aside, not retried
                with self.lock:
                    self.wh.record_failed_import(batch.source, str(exc))
                self.spool.quarantine(path, str(exc))
                self.metrics.spool_outcomes.labels("rejected").inc()
                refused += 1
                continue
            self.spool.remove(path)  # after the commit: a crash before this replays the batch, found stored
            self.metrics.spool_outcomes.labels("replayed" if result.replayed else "stored").inc()
            replayed += result.replayed
            stored += not result.replayed
            for table, n in result.stored.items():
                rows[table] = rows.get(table, 0) + n
        self.metrics.spool_waiting.set(self.spool.depth())
        detail = f"{stored} batches stored" + (f", {replayed} replayed" if replayed else "")
        detail += f", {refused} set aside" if refused else ""
        return JobResult(wrote=stored + replayed > 0, batched=True, rows=rows, detail=detail)
