"""A service run over a simulated day: the simulator's files appear as the fake clock passes them."""

from __future__ import annotations

import shutil
import threading
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

from collectors.dcgm import gpu_minutes
from collectors.exposition import parse_text
from gpusteward.clock import FakeClock
from gpusteward.config import load_config
from service.jobs import JobResult
from service.serve import ServeSettings, Service
from service.tasks import Shared
from simulator.serve import LiveFleet
from tests.configs import example_config_markdown_reviews
from warehouse import Warehouse
from warehouse.readmodel import ReadModel, load_read_model

DAY = date(2026, 10, 2)
START = datetime(2026, 10, 2, tzinfo=UTC)
END = START + timedelta(days=1, minutes=30)
TOKENS = "alice:alice-secret-token,bob:bob-secret-token"


def available_at(path: Path) -> datetime:
    """When a simulated file would exist: day files after their day; monthly and snapshot files at once."""
    name = path.name.split(".")[0]
    try:
        day = date.fromisoformat(name)
    except ValueError:
        if name.startswith("assoc-"):
            return datetime.strptime(name, "assoc-%Y%m%dT%H%M%SZ").replace(tzinfo=UTC)
        return START
    return datetime(day.year, day.month, day.day, tzinfo=UTC) + timedelta(days=1)


@dataclass
class Feeder:
    """A job that copies the simulator's files into the watched folder once the clock passes them."""

    staging: Path
    target: Path
    name: str = "feeder"
    interval: timedelta = timedelta(minutes=10)
    copied: list[str] = field(default_factory=list)

    def run(self, now: datetime) -> JobResult:
        for path in sorted(self.staging.rglob("*.*")):
            rel = path.relative_to(self.staging)
            if path.name == "manifest.json" or str(rel) in self.copied or available_at(path) > now:
                continue
            (self.target / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, self.target / rel)
            self.copied.append(str(rel))
        return JobResult()


@dataclass
class ServedDay:
    service: Service
    clock: FakeClock
    thread: threading.Thread
    day_done: threading.Event
    root: Path
    feeder: Feeder
    reads: list[str] = field(default_factory=list)  # read-model versions the reader saw while the service wrote
    read_errors: list[str] = field(default_factory=list)

    @property
    def base(self) -> str:
        assert self.service.url is not None
        return self.service.url

    def get(self, path: str) -> tuple[int, str]:
        try:
            with urllib.request.urlopen(self.base + path, timeout=30) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()


def start_service(root: Path, staging: Path) -> ServedDay:
    """Start the service in a thread; its sleep advances a FakeClock until END, then waits in real time."""
    root.mkdir(parents=True, exist_ok=True)
    example_config_markdown_reviews(root)
    config = load_config(root / "gpusteward.toml")
    incoming = root / "incoming"
    incoming.mkdir()
    clock = FakeClock(START)
    day_done = threading.Event()
    feeder = Feeder(staging, incoming)
    settings = ServeSettings(read_model=root / "readmodel", import_dirs=(incoming,), port=0, settle=timedelta(0))
    holder: dict[str, Service] = {}

    def sleep(seconds: float) -> None:
        if clock.now() < END:
            clock.advance(timedelta(seconds=max(seconds, 1.0)))
            return
        day_done.set()
        scheduler = holder["service"].scheduler
        assert scheduler is not None
        scheduler.wait(min(seconds, 0.2))

    def extra(_wh: Warehouse, _shared: Shared) -> list[Feeder]:
        return [feeder]

    service = Service(
        config, settings, clock=clock, sleep=sleep, extra_jobs=extra, env={"GPUSTEWARD_API_TOKENS": TOKENS}
    )
    holder["service"] = service
    thread = threading.Thread(target=service.run, name="service-under-test", daemon=True)
    thread.start()
    return ServedDay(service, clock, thread, day_done, root, feeder)


def published(served: ServedDay, shows: Callable[[ReadModel], bool], timeout_s: float = 120) -> ReadModel:
    """The first read model that `shows` what the test is waiting for. A control action's answer means
    "recorded"; the writer publishes the read model at its next turn, a moment later (issue 22)."""
    deadline = time.monotonic() + timeout_s  # a hang guard, not a speed limit
    while True:
        model = load_read_model(served.root / "readmodel")
        if shows(model) or time.monotonic() > deadline:
            return model
        time.sleep(0.05)


def stop_service(served: ServedDay) -> None:
    served.service.stop.set()
    served.thread.join(timeout=60)


def served_keys(fleet: LiveFleet, minutes: list[datetime]) -> set[tuple[str, int, datetime]]:
    """(host, gpu, minute) of every GPU series the fleet printed in those minutes, numbered as the collector
    numbers them (a MIG instance is not its card); a node without data answers 503 and adds nothing.

    The collector reads each distinct page (its series without their values) once: a node prints the same
    series minute after minute, and reading 3,840 pages took a fifth of the live test's time."""
    keys: set[tuple[str, int, datetime]] = set()
    gpus_of: dict[tuple[str, frozenset[str]], list[tuple[str, int]]] = {}
    for minute in minutes:
        for _, host in fleet.hosts:
            text = fleet.exposition(host, minute.timestamp())
            if text is None:
                continue
            series = frozenset(line.rpartition(" ")[0] for line in text.splitlines() if not line.startswith("#"))
            if (host, series) not in gpus_of:
                frame, _ = gpu_minutes(parse_text(text, openmetrics=False), default_cluster="default", source=host,
                                       scrape_ts_ms=int(minute.timestamp() * 1000))
                gpus_of[host, series] = list(frame.select("host", "gpu").iter_rows())
            naive = minute.replace(tzinfo=None)
            keys.update((h, g, naive) for h, g in gpus_of[host, series])
    return keys
