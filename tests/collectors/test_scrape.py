"""Live scraping against real HTTP servers on 127.0.0.1: good exporters and three kinds of failure."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import ExitStack
from datetime import date, datetime
from pathlib import Path

import polars as pl
import pytest
from prometheus_client import CollectorRegistry, generate_latest

from collectors.scrape import Scraper, ScrapeSettings
from collectors.targets import Target, load_file_sd, parse_file_sd, static_targets
from gpusteward.errors import InputError
from simulator.fleet import SHARED_CARDS
from simulator.serve import LiveFleet, serving
from tests.collectors.local_http import hang, http_server, status, text
from warehouse import open_warehouse

START = date(2026, 10, 1)
GARBAGE = b"<html><body>502 Bad Gateway {{{ not metrics</body></html>\n"


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture(scope="module")
def fleet() -> LiveFleet:
    return LiveFleet(4, 5, start=START, days=1)


@pytest.fixture
def moment(fleet: LiveFleet) -> float:
    return fleet.plan.start_s + 14 * 3600 + 17.5  # 14:00:17.5 on the first day (after the planted outage)


@pytest.fixture
def targets_file(fleet: LiveFleet, moment: float, tmp_path: Path) -> Iterator[Path]:
    fleet.clock = lambda: moment
    with serving(fleet, tmp_path / "targets.json"):
        yield tmp_path / "targets.json"


@pytest.fixture
def faulty() -> Iterator[list[Target]]:
    release = threading.Event()
    with ExitStack() as stack:
        addresses = [
            stack.enter_context(http_server(status(500, b"internal error\n"))),
            stack.enter_context(http_server(hang(release))),
            stack.enter_context(http_server(text(GARBAGE))),
        ]
        yield static_targets(addresses, {"cluster": "east"})
        release.set()


def _rows_per_minute(fleet: LiveFleet) -> int:
    """Eight rows a host (whole GPUs, or a MIG node's eight instances), a time-sliced host's cards one each."""
    shared = {h for _, h in fleet.hosts if h.split("-", 1)[1].startswith("nb-ts-")}
    return 8 * (len(fleet.hosts) - len(shared)) + SHARED_CARDS * len(shared)


def test_good_targets_stored_failures_recorded_no_zeros(
    fleet: LiveFleet, moment: float, targets_file: Path, faulty: list[Target], tmp_path: Path
) -> None:
    good = load_file_sd(targets_file)
    registry = CollectorRegistry()
    clock = FakeClock()
    scraper = Scraper(
        [*good, *faulty],
        # The hanging target times out; a loaded machine's good ones answer within it.
        settings=ScrapeSettings(timeout_s=5, backoff_s=30),
        registry=registry,
        clock=clock,
        wall_ms=lambda: int(moment * 1000),
    )
    batch = scraper.collect(flush=True)
    frame = batch.frames["gpu_minutes"]

    # Every good target's GPUs, one row each for the minute, with values; nothing for the failed ones.
    assert sorted(set(frame["host"].to_list())) == sorted(h for _, h in fleet.hosts)
    assert frame.height == _rows_per_minute(fleet)
    assert frame["ts"].unique().to_list() == [datetime(2026, 10, 1, 14, 0)]
    assert frame.select(pl.col("gpu_util", "fb_used_mib", "power_w").null_count()).row(0) == (0, 0, 0)

    failed = {p.source: p.message for p in batch.problems}
    urls = [t.url for t in faulty]
    assert set(failed) == set(urls)
    assert "HTTP 500" in failed[urls[0]]
    assert "(timeout)" in failed[urls[1]]
    assert "not a valid exposition" in failed[urls[2]]
    assert all(scraper.states[u].up is False for u in urls)
    assert all(scraper.states[t.url].up for t in good)

    with open_warehouse(tmp_path / "w.duckdb") as wh:
        result = wh.ingest("scrape", batch.frames, [str(p) for p in batch.problems])
        assert result.stored["gpu_minutes"] == _rows_per_minute(fleet)
        assert wh.count("gpu_minutes") == _rows_per_minute(fleet)

    exposed = generate_latest(registry).decode()
    assert 'gpusteward_scrape_failures_total{reason="http_status"} 1.0' in exposed
    assert 'gpusteward_scrape_failures_total{reason="timeout"} 1.0' in exposed
    assert 'gpusteward_scrape_failures_total{reason="parse"} 1.0' in exposed
    assert f'gpusteward_scrape_target_up{{target="{urls[0]}"}} 0.0' in exposed
    assert f'gpusteward_scrape_target_up{{target="{good[0].url}"}} 1.0' in exposed
    assert "gpusteward_scrape_samples_total" in exposed
    assert f"gpusteward_scrape_duration_seconds_count {float(len(good) + len(faulty))}" in exposed


def test_failed_targets_back_off_then_retry(moment: float, targets_file: Path, faulty: list[Target]) -> None:
    clock = FakeClock()
    scraper = Scraper(
        [*load_file_sd(targets_file)[:1], faulty[0]],
        settings=ScrapeSettings(timeout_s=0.5, backoff_s=30, backoff_max_s=100),
        clock=clock,
        wall_ms=lambda: int(moment * 1000),
    )
    scraper.collect()
    clock.now += 10
    second = scraper.collect()
    assert next(p.message for p in second.problems if p.source == faulty[0].url).startswith("down, not scraped")
    assert scraper.states[faulty[0].url].failures == 1
    clock.now += 30
    scraper.collect()
    assert scraper.states[faulty[0].url].failures == 2
    # the next wait doubles, capped at backoff_max_s
    assert scraper.states[faulty[0].url].retry_at == pytest.approx(clock.now + 60, abs=1)


def test_minutes_are_emitted_once_complete(moment: float, targets_file: Path) -> None:
    now = {"ms": int(moment * 1000)}
    scraper = Scraper(load_file_sd(targets_file)[:1], wall_ms=lambda: now["ms"])
    first = scraper.collect()  # the minute is still open: nothing yet
    assert first.frames["gpu_minutes"].height == 0
    now["ms"] += 20_000
    scraper.collect()
    now["ms"] += 30_000  # the next minute has begun: the first one is complete
    done = scraper.collect().frames["gpu_minutes"]
    assert done.height == 8
    assert done["ts"].unique().to_list() == [datetime(2026, 10, 1, 14, 0)]
    rest = scraper.take(None).frames["gpu_minutes"]
    assert rest["ts"].unique().to_list() == [datetime(2026, 10, 1, 14, 1)]


def test_refused_connection_and_non_utf8() -> None:
    with http_server(text(b"\xff\xfe\x00garbage")) as address:
        targets = static_targets([address, "127.0.0.1:9"])
        batch = Scraper(targets, settings=ScrapeSettings(timeout_s=2)).collect(flush=True)
    reasons = sorted(p.message.split(")")[0] for p in batch.problems)
    assert reasons == ["scrape failed (connection", "scrape failed (parse"]
    assert batch.frames["gpu_minutes"].height == 0


def test_file_sd_format() -> None:
    doc = """[{"targets": ["a:9400", "b:9400"], "labels": {"cluster": "east", "__metrics_path__": "/x"}},
              {"targets": ["https://c:1/m"]}]"""
    got = parse_file_sd(doc, source="sd.json")
    assert [t.url for t in got] == ["http://a:9400/x", "http://b:9400/x", "https://c:1/m"]
    assert got[0].labels == {"cluster": "east", "instance": "a:9400"}
    with pytest.raises(InputError, match="group 0: needs a 'targets' list"):
        parse_file_sd('[{"labels": {}}]', source="sd.json")
    with pytest.raises(InputError, match="not JSON"):
        parse_file_sd("[", source="sd.json")
