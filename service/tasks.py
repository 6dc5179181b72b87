"""The service's built-in jobs: import from folders (or a live source), evaluate, raise alerts, write reviews.

Each implements `service.jobs.Job`; the quota plan is computed and stored by the evaluation
(`service.pipeline.evaluate`), so it is as fresh as the evaluation. Shared state between jobs (is
there new data? which month is latest?) lives in `Shared`.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import ClassVar, Protocol

from prometheus_client import CollectorRegistry

from collectors.batch import CollectedBatch
from collectors.files import sort_for_import
from collectors.inference import WindowState
from collectors.inference_mappings import DEFAULT_INDEX, MappingIndex
from gpusteward.config import Config
from gpusteward.config.limits import DEFAULT_LIMITS, LimitsConfig
from gpusteward.config.service import DEFAULT_IMPORT_IGNORE
from gpusteward.domain import Month
from service.importer import expand, import_one
from service.jobs import JobResult
from service.metrics import ServiceMetrics
from service.pipeline import assess, latest_month, raise_alerts, store_plan, write_reviews
from warehouse import FileSignature, Warehouse


@dataclass
class Shared:
    """What the jobs tell each other; only touched under the scheduler's write lock."""

    dirty: bool = True  # new rows since the last evaluation (True at start: evaluate once)
    evaluated: set[str] = field(default_factory=set)  # months evaluated since the last new data
    alerts_due: bool = False
    review_requests: list[Month | None] = field(default_factory=list)  # None: the latest month
    retry_files: set[str] = field(default_factory=set)  # quarantined paths to read again (control API)


class LiveSource(Protocol):
    """A live collector (issue 3's scraper, issue 4's Slurm/Kubernetes pollers) as the service runs it."""

    @property
    def name(self) -> str: ...

    @property
    def registry(self) -> CollectorRegistry | None:
        """The source's own metrics, shown on the service's /metrics with a `source` label (or None)."""
        ...

    def collect(self, now: datetime) -> CollectedBatch:
        """One collection; raise TransientError to be retried with backoff, PermanentError to alert."""
        ...


@dataclass
class FolderImport:
    """Import files that appeared (or changed) in `folders` since the last run: one source per job.

    A file that cannot be read is quarantined (service.importer) and never stops the others. Files
    are read as `gpusteward import` reads them: with the config's inference `mappings` and
    `[limits]`, their sample times judged against the service's clock."""

    name: str
    interval: timedelta
    folders: Sequence[Path]
    wh: Warehouse
    shared: Shared
    metrics: ServiceMetrics
    settle: timedelta = timedelta(0)  # skip files modified this recently (still being written)
    ignore: tuple[str, ...] = DEFAULT_IMPORT_IGNORE  # globs on names never read (config service.import_ignore)
    mappings: MappingIndex = DEFAULT_INDEX  # built-ins and the config's (mapping_index(config))
    limits: LimitsConfig = DEFAULT_LIMITS  # the config's [limits]
    _seen: dict[str, FileSignature] | None = None  # read from the warehouse on the first run
    _state: WindowState = field(default_factory=WindowState)

    def run(self, now: datetime) -> JobResult:
        if self._seen is None:
            self._seen = self.wh.imported_files()  # a restarted service skips what it already stored
        seen = self._seen
        retry = {p for p in self.shared.retry_files if any(Path(p).is_relative_to(f) for f in self.folders)}
        for again in retry:
            seen.pop(again, None)
        self.shared.retry_files -= retry
        fresh: dict[Path, FileSignature] = {}
        for path in expand([f for f in self.folders if f.exists()], ignore=self.ignore):
            try:
                stat = path.stat()
            except FileNotFoundError:
                continue
            signature = FileSignature(str(path), stat.st_mtime, stat.st_size)
            if seen.get(str(path)) == signature or time.time() - stat.st_mtime < self.settle.total_seconds():
                continue
            fresh[path] = signature
        rows: dict[str, int] = {}
        failed = quarantined = 0
        for path in sort_for_import(list(fresh), mappings=self.mappings):
            outcome = import_one(
                self.wh,
                path,
                source=self.name,
                state=self._state,
                mappings=self.mappings,
                limits=self.limits,
                signature=fresh[path],
                retry=str(path) in retry,
                now=now,
            )
            if outcome.result is None:
                failed += 1
                quarantined += outcome.quarantined
            else:
                for table, n in outcome.result.stored.items():
                    rows[table] = rows.get(table, 0) + n
            seen[str(path)] = fresh[path]
        self.metrics.collection(self.name, ok=not failed)
        self.metrics.quarantine(self.name, new=quarantined, held=self.wh.quarantined().height)
        if any(rows.values()):
            self.shared.dirty = True
        detail = f"{len(fresh)} files, {sum(rows.values())} rows" + (f", {failed} failed" if failed else "")
        return JobResult(wrote=bool(fresh), rows=rows, detail=detail)


def months_to_evaluate(wh: Warehouse, now: datetime, tz: str = "UTC") -> list[Month]:
    """The latest month with data, and the one before it during the first day of a month (late records);
    months of `tz`, the pool's time zone."""
    try:
        latest = latest_month(wh, tz)
    except LookupError:
        return []
    chosen = [latest]
    aware_now = now if now.tzinfo is not None else now.replace(tzinfo=UTC)
    if aware_now - latest.start < timedelta(days=1) and latest.previous() in wh.data_months(tz):
        chosen.insert(0, latest.previous())
    return chosen


@dataclass
class Evaluate:
    """Evaluate (and plan quota for) the months with new data; skipped while nothing new arrived.

    It reads a snapshot of the warehouse and computes without the write lock (collection, the drain
    and control actions go on meanwhile), stores the month's outputs on a connection of its own, and
    takes the lock only to store the quota plan."""

    config: Config
    wh: Warehouse
    shared: Shared
    name: str = "evaluate"
    interval: timedelta = timedelta(minutes=15)
    lock: AbstractContextManager[object] = field(default_factory=threading.RLock)  # the service's write lock
    locks_itself: ClassVar[bool] = True

    def run(self, now: datetime) -> JobResult:
        with self.lock:
            if not self.shared.dirty:
                return JobResult(detail="no new data")
            self.shared.dirty = False  # rows stored from now on call for the next evaluation
        try:
            months = self._evaluate(now)
        except BaseException:
            with self.lock:
                self.shared.dirty = True  # evaluated again at the next turn
            raise
        return JobResult(wrote=bool(months), detail=", ".join(str(m) for m in months))

    def _evaluate(self, now: datetime) -> list[Month]:
        with snapshot(self.wh, self.lock) as view:
            months = months_to_evaluate(view, now, self.config.timezone)
            assessed = [assess(view, self.config, month) for month in months]
        with own_connection(self.wh, self.lock) as side:
            for assessment in assessed:  # the month's outputs: tables only the evaluation writes, no lock held
                side.store_month_outputs(assessment.outputs)
        with self.lock:
            for assessment in assessed:
                store_plan(self.wh, assessment)
            self.shared.alerts_due = bool(months)
        return months


@contextmanager
def snapshot(wh: Warehouse, lock: AbstractContextManager[object]) -> Iterator[Warehouse]:
    """A snapshot view of `wh` (Warehouse.snapshot_view), opened and closed under `lock` (both touch the
    writer's connection), read without it."""
    with _opened_under(wh.snapshot_view(), lock) as view:
        yield view


@contextmanager
def own_connection(wh: Warehouse, lock: AbstractContextManager[object]) -> Iterator[Warehouse]:
    """`wh` on a connection of its own (Warehouse.own_connection), opened and closed under `lock`."""
    with _opened_under(wh.own_connection(), lock) as side:
        yield side


@contextmanager
def _opened_under(
    opening: AbstractContextManager[Warehouse], lock: AbstractContextManager[object]
) -> Iterator[Warehouse]:
    with lock:
        opened = opening.__enter__()
    try:
        yield opened
    finally:
        with lock:
            opening.__exit__(None, None, None)


@dataclass
class RaiseAlerts:
    """Protection-line alerts of the latest evaluated month, recorded once, and one turn of the alert
    engine and outbox (which retries failed deliveries itself, with its own backoff)."""

    config: Config
    wh: Warehouse
    shared: Shared
    metrics: ServiceMetrics
    name: str = "alerts"
    interval: timedelta = timedelta(minutes=5)

    def run(self, now: datetime) -> JobResult:
        months = self.wh.months()
        if not months:
            return JobResult(detail="nothing evaluated yet")
        started = time.perf_counter()
        # Only the episodes: this runs every few minutes, the month's other outputs are not needed for it.
        run = raise_alerts(self.wh, self.config, months[-1], self.wh.month_episodes(months[-1]), now)
        attempts = run.tick.delivery.attempts
        self.metrics.delivered({a.receiver: a.error is None for a in attempts}, time.perf_counter() - started)
        self.shared.alerts_due = False
        wrote = run.new > 0 or run.tick.stored > 0 or bool(attempts)
        return JobResult(wrote=wrote, detail=f"{len(run.alerts)} alerts, {run.new} new, {len(attempts)} deliveries")


class ReviewSchedule(Protocol):
    """When the review is due (issue 8's service/schedule.py implements the configured cron)."""

    def due(self, now: datetime, last: datetime | None) -> Month | None:
        """The month to review now, or None."""
        ...


@dataclass
class MonthlyReview:
    """The default schedule: the previous month, once, from the first hour of a new month in `tz`
    (the pool's time zone: in Asia/Shanghai October's review is due at 1 November 00:00 local,
    31 October 16:00 UTC)."""

    tz: str = "UTC"

    def due(self, now: datetime, last: datetime | None) -> Month | None:
        this = Month.of(now, self.tz)
        if last is not None and Month.of(last, self.tz) == this:
            return None
        return this.previous()


@dataclass
class WriteReview:
    """Write the review when the schedule says so, or when one was requested through the control API."""

    config: Config
    wh: Warehouse
    shared: Shared
    out_dir: Path
    schedule: ReviewSchedule
    name: str = "review"
    interval: timedelta = timedelta(hours=1)
    written: list[Path] = field(default_factory=list)
    _last: datetime | None = None
    on_written: Callable[[list[Path]], None] | None = None
    lock: AbstractContextManager[object] = field(default_factory=threading.RLock)  # the service's write lock
    locks_itself: ClassVar[bool] = True

    def run(self, now: datetime) -> JobResult:
        with snapshot(self.wh, self.lock) as view:  # reads a snapshot, writes only files: no write lock held
            return self._write(view, now)

    def _write(self, view: Warehouse, now: datetime) -> JobResult:
        evaluated = view.months()
        wanted: list[Month] = []
        scheduled = self.schedule.due(now, self._last)
        if scheduled is not None and scheduled in evaluated:
            wanted.append(scheduled)
        while self.shared.review_requests:
            requested = self.shared.review_requests.pop(0)
            month = requested or (evaluated[-1] if evaluated else None)
            if month is not None and month in evaluated and month not in wanted:
                wanted.append(month)
        for month in wanted:
            paths = write_reviews(
                view,
                self.config,
                month,
                self.out_dir,
                formats=list(self.config.reports.formats),
                langs=list(self.config.reports.languages),
            )
            self.written.extend(paths)
            if self.on_written is not None:
                self.on_written(paths)
        if scheduled is not None and scheduled in evaluated:
            self._last = now
        return JobResult(detail=", ".join(str(m) for m in wanted) or "not due")
