"""Collection never waits for analysis: the live fleet scraped every 30 s while each evaluation takes ten
simulated minutes.

The service runs its three lanes in their own threads on simulated time (tests/service/
simulated_lanes.py: the fake clock moves only when every lane sleeps). The evaluator is made slow
by sleeping ten simulated minutes inside `evaluate_month`: while it does, the collection lane must
go on scraping on its schedule and the writer must go on storing, and a control action must be
answered. Had the evaluation held the write lock (as it did before the spool), the writer would
block, simulated time would stop, and the test would fail with TimeStuckError instead.

Afterwards the warehouse holds every minute the fleet served exactly once, and every batch the
spool acknowledged is recorded once.
"""

from __future__ import annotations

import dataclasses
import threading
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from gpusteward.clock import FakeClock
from gpusteward.config import example_config_path, load_config
from service import pipeline
from service.collection import DrainSpool
from service.metrics import ServiceMetrics
from service.serve import Service, settings_from_config
from service.spool import Spool, spool_beside
from service.tasks import Shared
from simulator.serve import LiveFleet, scrape_entry, serving
from sla.month import evaluate_month
from tests.service.serve_helpers import served_keys
from tests.service.simulated_lanes import SimulatedLanes
from warehouse import open_warehouse

pytestmark = pytest.mark.slow  # about two minutes: scheduled first (tests/parallel.py)

START = datetime(2026, 10, 2, 1, 0, tzinfo=UTC)  # hours before the fleet's planted outage and breach
HOURS = 1
NODES = 8
SCRAPE_EVERY = timedelta(seconds=30)
EVALUATE_EVERY = timedelta(minutes=15)
SLOW = timedelta(minutes=10)  # each evaluation takes this long in simulated time
TOKEN = "alice-secret-token"


@dataclass
class Overlap:
    """What happened while one slow evaluation ran."""

    began: datetime
    ended: datetime
    scrapes: int
    stored: float
    action_status: int
    action_seconds: float


@dataclass
class SpoolRun:
    root: Path
    fleet: LiveFleet
    collections: int  # scrape cycles the collection lane ran
    collect_times: list[datetime]
    overlaps: list[Overlap] = field(default_factory=list)
    stuck: list[str] = field(default_factory=list)


def _post(url: str, body: bytes) -> tuple[int, float]:
    request = urllib.request.Request(url, data=body, method="POST", headers={
        "Content-Type": "application/json", "Authorization": f"Bearer {TOKEN}"})
    began = time.perf_counter()
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, time.perf_counter() - began
    except urllib.error.HTTPError as exc:
        return exc.code, time.perf_counter() - began


@pytest.fixture(scope="module")
def spool_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SpoolRun]:
    root = tmp_path_factory.mktemp("spooled")
    clock = FakeClock(START)
    fleet = LiveFleet(NODES, seed=7, start=date(2026, 10, 1), days=2, clock=lambda: clock.now().timestamp())
    config_text = Path(example_config_path()).read_text(encoding="utf-8")
    monkey = pytest.MonkeyPatch()
    with serving(fleet, root / "targets.json"):
        (root / "gpusteward.toml").write_text(
            config_text
            + f"""
[service]
listen = "127.0.0.1:0"
evaluate_interval = "{EVALUATE_EVERY.total_seconds():.0f}s"
alerts_interval = "5m"
"""
            + scrape_entry("targets.json", SCRAPE_EVERY.total_seconds()),
            encoding="utf-8",
        )
        config = load_config(root / "gpusteward.toml")
        settings = dataclasses.replace(settings_from_config(config), action_wait=timedelta(seconds=20))
        stop = threading.Event()
        lanes = SimulatedLanes(clock, ("collection", "writer", "analysis"), START + timedelta(hours=HOURS), stop)
        service = Service(config, settings, clock=clock, stop=stop, lane_sleep=lanes.sleeper,
                          env={"GPUSTEWARD_API_TOKENS": f"alice:{TOKEN}"})
        collect_times: list[datetime] = []
        overlaps: list[Overlap] = []

        def scrapes() -> int:
            return service.lanes[0].states["collect:fleet"].runs

        def stored() -> float:
            value = service.metrics.registry.get_sample_value("gpusteward_spool_drained_total", {"outcome": "stored"})
            return value or 0.0

        def slow_evaluation(*args: Any, **kwargs: Any) -> Any:
            before, stored_before, began = scrapes(), stored(), clock.now()
            assert service.url is not None
            status, seconds = _post(service.url + "/api/v1/reviews", b'{"month": "2026-10"}')
            lanes.sleep("analysis", SLOW.total_seconds())
            overlaps.append(Overlap(began, clock.now(), scrapes() - before, stored() - stored_before, status, seconds))
            return evaluate_month(*args, **kwargs)

        monkey.setattr(pipeline, "evaluate_month", slow_evaluation)
        original_collect = service._lanes

        def watched_lanes(wh: Any) -> Any:
            lanes_of = original_collect(wh)
            for job in lanes_of["collection"]:
                source = job.source  # type: ignore[attr-defined]
                inner = source.collect

                def collect(now: datetime, inner: Any = inner) -> Any:
                    collect_times.append(now)
                    return inner(now)

                source.collect = collect
            return lanes_of

        monkey.setattr(service, "_lanes", watched_lanes)
        thread = threading.Thread(target=service.run, daemon=True)
        thread.start()
        try:
            thread.join(1800)  # a hang fails below instead of blocking CI
            assert not thread.is_alive(), "the simulated hours did not pass"
        finally:
            stop.set()
            monkey.undo()
        yield SpoolRun(root, fleet, len(collect_times), collect_times, overlaps, lanes.stuck)


def test_scrapes_ran_on_schedule_through_every_slow_evaluation(spool_run: SpoolRun) -> None:
    assert spool_run.stuck == []
    whole = [o for o in spool_run.overlaps if o.ended - o.began == SLOW]  # the last may be cut short by the end
    assert len(whole) >= 3, spool_run.overlaps
    per_evaluation = int(SLOW / SCRAPE_EVERY)
    for overlap in whole:
        assert overlap.scrapes >= per_evaluation - 1, overlap
        assert overlap.stored >= per_evaluation - 2, overlap  # the writer stored them meanwhile too
        assert overlap.action_status < 300, overlap  # a control action was answered during the evaluation
    gaps = {b - a for a, b in zip(spool_run.collect_times, spool_run.collect_times[1:], strict=False)}
    assert gaps == {SCRAPE_EVERY}  # not one cycle late or skipped
    assert spool_run.collections == int(timedelta(hours=HOURS) / SCRAPE_EVERY) + 1


def test_every_served_minute_is_stored_once_and_every_batch_once(spool_run: SpoolRun) -> None:
    db = spool_run.root / "gpusteward.duckdb"
    with open_warehouse(db) as wh:  # what a restart does first: drain what is still spooled
        spool = Spool(spool_beside(db))
        waiting = len(spool.pending())
        DrainSpool(spool, wh, Shared(), ServiceMetrics()).run(START)
        stored = wh.query("SELECT g.host, g.gpu, m.ts FROM gpu_minutes m JOIN gpus g USING (gpu_key)")
        batches = wh.query("SELECT batch_id FROM spool_batches")
    assert waiting <= 2  # the writer kept up: at most the last cycle's batches waited for a drain
    assert batches.height == batches.unique().height == spool_run.collections
    assert stored.height == stored.unique().height  # none doubled
    last = stored["ts"].max()
    assert isinstance(last, datetime)
    # the minute running when the hours ran out is still pending in the scraper, the one before is stored
    assert last == (START + timedelta(hours=HOURS, minutes=-1)).replace(tzinfo=None)
    minutes = int((last - START.replace(tzinfo=None)) / timedelta(minutes=1)) + 1
    served = served_keys(spool_run.fleet, [START + timedelta(minutes=m) for m in range(minutes)])
    got = set(stored.iter_rows())
    assert got == served  # none lost, none invented
    assert stored.filter(pl.col("ts") == last).height > 0
