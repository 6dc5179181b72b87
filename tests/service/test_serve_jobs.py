"""The job loop: isolation, backoff for transient errors, one alert per permanent error, fake time."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from gpusteward.clock import FakeClock
from gpusteward.errors import PermanentError, TransientError
from service.jobs import JobResult, Scheduler, backoff

T0 = datetime(2026, 10, 1, tzinfo=UTC)


@dataclass
class Scripted:
    name: str
    interval: timedelta
    fail: list[Exception | None] = field(default_factory=list)
    ran: list[datetime] = field(default_factory=list)
    batched: bool = False

    def run(self, now: datetime) -> JobResult:
        self.ran.append(now)
        error = self.fail.pop(0) if self.fail else None
        if error is not None:
            raise error
        return JobResult(wrote=True, batched=self.batched)


def _run_for(jobs: list[Scripted], hours: float, publish_every: timedelta = timedelta(0),
             ) -> tuple[Scheduler, list[tuple[str, str]], int]:
    clock = FakeClock(T0)
    stop = threading.Event()
    alerts: list[tuple[str, str]] = []
    published = []

    def sleep(seconds: float) -> None:
        clock.advance(timedelta(seconds=seconds))
        if clock.now() - T0 >= timedelta(hours=hours):
            stop.set()

    scheduler = Scheduler(jobs, clock, stop, sleep=sleep, after_writes=lambda: published.append(1),
                          on_permanent=lambda name, error, _now: alerts.append((name, error)),
                          publish_every=publish_every)
    ready = threading.Event()
    scheduler.run(ready)
    assert ready.is_set()
    return scheduler, alerts, len(published)


def test_a_failing_job_never_stops_the_others() -> None:
    broken = Scripted("broken", timedelta(minutes=5), fail=[RuntimeError("bug")] * 1000)
    healthy = Scripted("healthy", timedelta(minutes=5))
    scheduler, alerts, published = _run_for([broken, healthy], hours=1)
    assert len(healthy.ran) == 12
    assert len(broken.ran) == 12
    assert alerts == [("broken", "RuntimeError: bug")]  # alerted once, not every run
    assert published == 12
    assert scheduler.states["broken"].failures == 12


def test_scrapes_are_published_together_and_other_writes_at_once() -> None:
    scrape = Scripted("collect:fleet", timedelta(seconds=30), batched=True)
    _, _, published = _run_for([scrape], hours=1, publish_every=timedelta(minutes=5))
    assert len(scrape.ran) == 120
    assert published == 11  # at 5, 10, ... 55 minutes, not after each of the 120 scrapes
    evaluate = Scripted("evaluate", timedelta(minutes=2))
    _, _, published = _run_for([Scripted("collect:fleet", timedelta(seconds=30), batched=True), evaluate], hours=1,
                               publish_every=timedelta(minutes=5))
    assert published == 30  # each evaluation publishes at once, taking the scrapes' minutes with it


def test_transient_errors_back_off_then_recover() -> None:
    flaky = Scripted("flaky", timedelta(minutes=1),
                     fail=[TransientError("timeout", delay_s=60)] * 3)
    scheduler, alerts, _ = _run_for([flaky], hours=1)
    gaps = [(b - a).total_seconds() for a, b in zip(flaky.ran, flaky.ran[1:], strict=False)][:4]
    assert gaps == [60, 120, 240, 60]
    assert alerts == []
    assert scheduler.states["flaky"].failures == 0


def test_a_permanent_error_alerts_and_keeps_the_interval() -> None:
    bad = Scripted("bad", timedelta(minutes=10), fail=[PermanentError("bad credentials")] * 2)
    _, alerts, _ = _run_for([bad], hours=1)
    assert alerts == [("bad", "permanent: bad credentials")]
    assert next((b - a) for a, b in zip(bad.ran, bad.ran[1:], strict=False)) == timedelta(minutes=10)


def test_backoff_is_capped() -> None:
    assert backoff(1, 30, timedelta(minutes=5)) == timedelta(seconds=30)
    assert backoff(20, 30, timedelta(minutes=5)) == timedelta(hours=1)


@dataclass
class Observed:
    late: list[tuple[str, float]] = field(default_factory=list)

    def job_started(self, name: str, late_s: float) -> None:
        self.late.append((name, late_s))

    def job_finished(self, name: str, result: JobResult | None, seconds: float, error: str | None) -> None:
        pass


def test_the_observer_is_told_how_late_each_run_began() -> None:
    """A lane that oversleeps (a scrape waiting for something else) shows as lateness, the metric
    gpusteward_job_start_lateness_seconds."""
    clock = FakeClock(T0)
    stop = threading.Event()
    scrape = Scripted("collect:fleet", timedelta(seconds=30))
    observed = Observed()

    def oversleep(seconds: float) -> None:
        clock.advance(timedelta(seconds=seconds + 5))
        if clock.now() - T0 >= timedelta(minutes=5):
            stop.set()

    Scheduler([scrape], clock, stop, sleep=oversleep, observer=observed).run()
    assert observed.late[0] == ("collect:fleet", 0.0)  # due at start
    assert {late for _, late in observed.late[1:]} == {5.0}
    assert len(observed.late) == len(scrape.ran) == 9
