"""Scheduled jobs and the loop that runs them: each isolated, transient errors backed off, permanent ones alerted.

A job is anything with a `name`, an `interval` and `run(now) -> JobResult`; the service's built-in
jobs (import, evaluate, alerts, review, quota) implement the same Protocol a live collector or
issue 8's scheduled review will. The loop takes a clock, a stop event and a `sleep` function, so a
test runs a simulated day in a second by letting `sleep` advance a FakeClock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Protocol

from gpusteward.clock import Clock
from gpusteward.errors import PermanentError, TransientError

log = logging.getLogger("gpusteward.service")

MAX_BACKOFF = timedelta(hours=1)


@dataclass(frozen=True)
class JobResult:
    """What a run did. `wrote`: the warehouse changed, so the read model is published again: at once, or,
    when `batched` (a scrape's minutes), with the next publication, at most the scheduler's `publish_every`
    later: publishing after every 30 s scrape would cost more than the scrape (a status and a month's
    outputs recomputed and written each time)."""

    wrote: bool = False
    batched: bool = False
    rows: dict[str, int] = field(default_factory=dict)  # rows stored per table (collection jobs)
    detail: str = ""


class Job(Protocol):
    """A unit of scheduled work. Raise TransientError to be retried with backoff, PermanentError to alert.

    The scheduler runs a job under its write lock, unless the job has a true `locks_itself` attribute:
    such a job takes the lock itself only around its writes (an evaluation reading a snapshot), or
    never (a collection that only spools)."""

    @property
    def name(self) -> str: ...

    @property
    def interval(self) -> timedelta: ...

    def run(self, now: datetime) -> JobResult: ...


@dataclass
class JobState:
    next_due: datetime
    failures: int = 0  # consecutive
    runs: int = 0
    last_ok: datetime | None = None
    last_error: str | None = None
    alerted: str | None = None  # the permanent error already alerted, so it is sent once


class JobObserver(Protocol):
    """Told about every run; the service's metrics implement it."""

    def job_started(self, name: str, late_s: float) -> None:
        """A run began `late_s` seconds after it was due (0 when on time)."""
        ...

    def job_finished(self, name: str, result: JobResult | None, seconds: float, error: str | None) -> None: ...


def backoff(failures: int, hint_s: float, interval: timedelta) -> timedelta:
    """Delay before retry number `failures` (1-based): doubling from the error's hint, at most an hour."""
    base = max(hint_s, 1.0)
    delay = timedelta(seconds=base * 2 ** max(failures - 1, 0))
    return min(delay, max(MAX_BACKOFF, interval))


class Scheduler:
    """Runs due jobs in order, one at a time, each under `write_lock` so control actions never interleave
    (unless the job `locks_itself`). The service runs one scheduler per lane (collection, writer,
    analysis), each in its own thread."""

    def __init__(
        self,
        jobs: Sequence[Job],
        clock: Clock,
        stop: threading.Event,
        *,
        write_lock: threading.Lock | threading.RLock | None = None,
        sleep: Callable[[float], None] | None = None,
        after_writes: Callable[[], None] | None = None,
        on_permanent: Callable[[str, str, datetime], None] | None = None,
        observer: JobObserver | None = None,
        publish_every: timedelta = timedelta(0),
    ) -> None:
        names = [j.name for j in jobs]
        if len(set(names)) != len(names):
            raise ValueError(f"job names must be unique: {names}")
        self.jobs = list(jobs)
        self.clock = clock
        self.stop = stop
        self.lock = write_lock or threading.RLock()
        self.sleep = sleep or self.wait
        self._wake = threading.Event()
        self.after_writes = after_writes
        self.on_permanent = on_permanent
        self.observer = observer
        start = clock.now()
        self.states = {j.name: JobState(next_due=start) for j in jobs}
        self.publish_every = publish_every
        self.published_at = start  # the caller publishes once at start
        self.unpublished = False  # batched writes wait for the next publication
        self._publish_asked = False  # a control action asked for a publication as soon as possible

    def run_due(self) -> list[str]:
        """Run every job that is due now (in the order given); return the names of those that wrote."""
        wrote: list[str] = []
        urgent = False
        for job in self.jobs:
            if self.stop.is_set():
                break
            state = self.states[job.name]
            now = self.clock.now()
            if now < state.next_due:
                continue
            result = self._run_one(job, state, now)
            if result is not None and result.wrote:
                wrote.append(job.name)
                urgent = urgent or not result.batched
        asked, self._publish_asked = self._publish_asked, False
        self.unpublished = self.after_writes is not None and (self.unpublished or bool(wrote) or asked)
        if self.unpublished and not self.stop.is_set():
            now = self.clock.now()
            if urgent or asked or now >= self.published_at + self.publish_every:
                self._publish()
                self.published_at, self.unpublished = now, False
        return wrote

    def publish_soon(self) -> None:
        """Publish at the next turn of the loop (a control action was recorded), without waiting for it here."""
        self._publish_asked = True
        self._wake.set()

    def wait(self, seconds: float) -> None:
        """Real time: sleep until `seconds` pass, `stop` is set or a job is poked."""
        deadline = time.monotonic() + seconds
        while not self.stop.is_set() and not self._wake.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._wake.wait(min(left, 0.5))
        self._wake.clear()

    def poke(self, name: str) -> None:
        """Make job `name` due now and wake the loop (a review requested through the API)."""
        if name in self.states:
            self.states[name].next_due = self.clock.now()
        self._wake.set()

    def _publish(self) -> None:
        assert self.after_writes is not None
        try:
            self.after_writes()  # it takes what locks it needs: a publication reads a snapshot, not under the lock
        except Exception:
            log.exception("publishing the read model failed; the previous version stays current")

    def _run_one(self, job: Job, state: JobState, now: datetime) -> JobResult | None:
        started = time.perf_counter()
        if self.observer is not None:
            self.observer.job_started(job.name, max((now - state.next_due).total_seconds(), 0.0))
        result: JobResult | None = None
        error: str | None = None
        try:
            if getattr(job, "locks_itself", False):
                result = job.run(now)
            else:
                with self.lock:
                    result = job.run(now)
        except TransientError as exc:
            state.failures += 1
            error = f"transient: {exc}"
            state.next_due = now + backoff(state.failures, exc.delay_s, job.interval)
            log.warning("job %s: %s (retry %d at %s)", job.name, exc, state.failures, state.next_due.isoformat())
        except Exception as exc:  # a failing job never stops the others
            state.failures += 1
            kind = "permanent" if isinstance(exc, PermanentError) else type(exc).__name__
            error = f"{kind}: {exc}"
            state.next_due = now + job.interval
            if isinstance(exc, PermanentError):
                log.error("job %s failed permanently: %s", job.name, exc)
            else:
                log.exception("job %s failed", job.name)
            if state.alerted != error and self.on_permanent is not None:
                state.alerted = error
                self._alert(job.name, error, now)
        else:
            state.failures = 0
            state.last_ok = now
            state.alerted = None
            state.next_due = now + job.interval
        state.runs += 1
        state.last_error = error
        if self.observer is not None:
            self.observer.job_finished(job.name, result, time.perf_counter() - started, error)
        return result

    def _alert(self, name: str, error: str, now: datetime) -> None:
        assert self.on_permanent is not None
        try:
            self.on_permanent(name, error, now)
        except Exception:
            log.exception("alerting about job %s failed", name)

    def next_wake(self) -> datetime:
        due = [s.next_due for s in self.states.values()]
        if self._publish_asked:
            due.append(self.clock.now())
        if self.unpublished:
            due.append(self.published_at + self.publish_every)
        return min(due, default=self.clock.now() + timedelta(minutes=1))

    def run(self, ready: threading.Event | None = None) -> None:
        """Loop until `stop` is set: run due jobs, publish, sleep until the next is due.

        `ready` is set after the first cycle has run (and published)."""
        while not self.stop.is_set():
            self.run_due()
            if ready is not None and not ready.is_set():
                ready.set()
            if self.stop.is_set():
                break
            delay = (self.next_wake() - self.clock.now()).total_seconds()
            self.sleep(max(delay, 0.0))
