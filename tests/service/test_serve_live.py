"""The service scraping the live simulator (`serve-fleet`) for simulated hours, from its config alone.

Both run on one fake clock: the fleet prints what dcgm-exporter would print at the clock's minute,
and the service's scrape source stamps each scrape with the same clock; the fleet's Slurm and
inference files arrive in the import folder as the clock passes them. The warehouse must hold
exactly the minutes the fleet served, with the fleet's values; /metrics must show the source; the
planted inference-reserve breach must reach the webhook within two evaluation intervals of its data.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from collectors.dcgm import gpu_minutes
from collectors.exposition import parse_text
from gpusteward.clock import FakeClock
from gpusteward.config import example_config_path, load_config
from service.serve import Service, settings_from_config
from simulator import simulate
from simulator.serve import LiveFleet, scrape_entry, serving
from tests.alerts.server import Recorder, recording_server
from tests.service.serve_helpers import Feeder, served_keys
from warehouse import open_warehouse

pytestmark = pytest.mark.slow  # minutes: scheduled first (tests/parallel.py)

START = datetime(2026, 10, 2, 5, 30, tzinfo=UTC)  # half an hour before west-gpu-03's planted outage (06:00-12:00)
# Through the outage and the scraper's recovery (its backoff is capped at 10 minutes: scraped again by 12:10), and the
# reserve breach (09:00-14:00) reaching the webhook (within two evaluation intervals of 09:10).
HOURS = 7
NODES = 8
EVALUATE_EVERY = timedelta(minutes=30)
BACKOFF_CAP_MIN = 10  # ScrapeSettings.backoff_max_s


@dataclass
class LiveRun:
    root: Path
    fleet: LiveFleet
    metrics: str
    webhook: Recorder
    first_alert_at: datetime | None  # service clock when the webhook had the reserve breach's alert


@pytest.fixture(scope="module")
def live_run(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveRun]:
    """The simulated fleet of `gpusteward simulate --nodes 8 --seed 7` served live for 2026-10-02 05:30-12:30
    (a reserve breach 09:00-14:00, west-gpu-03 silent 06:00-12:00); its Slurm and inference files arrive
    through the import folder as the clock passes. The read model is published with each evaluation rather
    than every 5 minutes of scrapes (a quarter of the run's time): nothing here reads it, the served day's
    tests do."""
    root = tmp_path_factory.mktemp("live")
    staging = tmp_path_factory.mktemp("sim")
    # GPU telemetry comes live from the fleet instead of files
    simulate(staging, date(2026, 10, 1), 2, 7, nodes=NODES, telemetry=lambda path: not path.startswith("dcgm/"))
    clock = FakeClock(START)
    fleet = LiveFleet(NODES, seed=7, start=date(2026, 10, 1), days=2, clock=lambda: clock.now().timestamp())
    incoming = root / "incoming"
    incoming.mkdir()
    feeder = Feeder(staging, incoming)
    config_text = Path(example_config_path()).read_text(encoding="utf-8")
    with recording_server() as webhook, serving(fleet, root / "targets.json"):
        (root / "gpusteward.toml").write_text(
            config_text
            + f"""
[[alerts.receivers]]
name = "platform-hook"
kind = "webhook"
url = "{webhook.url}"

[service]
listen = "127.0.0.1:0"
import_dirs = ["incoming"]
import_interval = "5m"
evaluate_interval = "{EVALUATE_EVERY.total_seconds():.0f}s"
alerts_interval = "5m"
publish_interval = "{EVALUATE_EVERY.total_seconds():.0f}s"
"""
            + scrape_entry("targets.json", 60),
            encoding="utf-8",
        )
        config = load_config(root / "gpusteward.toml")
        settings = dataclasses.replace(settings_from_config(config), settle=timedelta(0))
        end = START + timedelta(hours=HOURS)
        done = threading.Event()
        holder: dict[str, Service] = {}
        seen: list[datetime] = []

        def sleep(seconds: float) -> None:
            if not seen and any(b"InferenceReserveBreach" in body for body in webhook.bodies):
                seen.append(clock.now())
            if clock.now() < end:
                clock.advance(timedelta(seconds=max(seconds, 1.0)))
                return
            done.set()
            scheduler = holder["service"].scheduler
            assert scheduler is not None
            scheduler.wait(min(seconds, 0.2))

        service = Service(config, settings, clock=clock, sleep=sleep, extra_jobs=lambda _wh, _shared: [feeder])
        holder["service"] = service
        thread = threading.Thread(target=service.run, daemon=True)
        thread.start()
        try:
            assert done.wait(1800), "the simulated hours did not pass"  # a hang, not a speed limit
            assert service.url is not None
            with urllib.request.urlopen(service.url + "/metrics", timeout=30) as response:
                metrics = response.read().decode()
        finally:
            service.stop.set()
            thread.join(60)
        yield LiveRun(root, fleet, metrics, webhook, seen[0] if seen else None)


def _recovering(fleet: LiveFleet, host: str, minute: datetime) -> bool:
    """The host's exporter answered nothing within the scraper's backoff cap before `minute`."""
    utc = minute.replace(tzinfo=UTC)
    return any(
        fleet.exposition(host, (utc - timedelta(minutes=k)).timestamp()) is None for k in range(1, BACKOFF_CAP_MIN + 1)
    )


def test_every_served_minute_is_stored_once(live_run: LiveRun) -> None:
    root, fleet = live_run.root, live_run.fleet
    with open_warehouse(root / "gpusteward.duckdb", read_only=True) as wh:
        stored = wh.query("SELECT g.host, g.gpu, m.ts FROM gpu_minutes m JOIN gpus g USING (gpu_key)")
    assert stored.height == stored.unique().height
    last = stored["ts"].max()
    assert isinstance(last, datetime)
    # the minute running when the simulated hours ran out is still pending in the scraper
    assert last >= (START + timedelta(hours=HOURS, minutes=-2)).replace(tzinfo=None)
    minutes = int((last - START.replace(tzinfo=None)).total_seconds() // 60) + 1
    served = served_keys(fleet, [START + timedelta(minutes=m) for m in range(minutes)])
    got = set(stored.iter_rows())
    assert got <= served  # nothing the fleet did not serve: no zeros for a silent exporter
    # A served minute may be missing only while the scraper still backs off from a recent outage
    # (west-gpu-03's planted one, 06:00-12:00): backoff is counted on the service's clock.
    missed = served - got
    assert all(_recovering(fleet, host, minute) for host, _, minute in missed), sorted(missed)[:5]
    assert len(missed) <= 8 * BACKOFF_CAP_MIN


def test_stored_values_are_what_the_fleet_served(live_run: LiveRun) -> None:
    root, fleet = live_run.root, live_run.fleet
    minute = START + timedelta(minutes=37)
    expected = []
    for _, host in fleet.hosts:
        text = fleet.exposition(host, minute.timestamp())
        if text is None:
            continue  # a node without data (its exporter answers 503)
        frame, _ = gpu_minutes(
            parse_text(text, openmetrics=False),
            default_cluster="default",
            source=host,
            scrape_ts_ms=int(minute.timestamp() * 1000),
        )
        expected.append(frame)
    want = (
        pl.concat(expected)
        .select("host", "gpu", "job_id", "gpu_util", "power_w", "energy_mj")
        .with_columns(  # the warehouse keeps power to 0.1 W (migration 011)
            (pl.col("power_w").cast(pl.Float64) * 10).round(mode="half_away_from_zero").truediv(10).cast(pl.Float32)
        )
        .sort("host", "gpu")
    )
    with open_warehouse(root / "gpusteward.duckdb", read_only=True) as wh:
        got = wh.query(
            "SELECT g.host, g.gpu, m.job_id, m.gpu_util, m.power_w, m.energy_mj"
            " FROM gpu_minutes m JOIN gpus g USING (gpu_key) WHERE m.ts = ? ORDER BY 1, 2",
            [minute.replace(tzinfo=None)],
        )
    assert got.height > 0
    assert got.rows() == want.rows()


def test_metrics_show_the_scrape_source(live_run: LiveRun) -> None:
    fleet, metrics = live_run.fleet, live_run.metrics
    assert 'gpusteward_collection_up{source="fleet"} 1.0' in metrics
    up = [line for line in metrics.splitlines() if line.startswith("gpusteward_scrape_target_up{")]
    assert len(up) == len(fleet.hosts)
    assert all('source="fleet"' in line for line in up)
    # a node the fleet has no data for is down (503), never zeros; the others are up
    silent = {
        host for _, host in fleet.hosts if fleet.exposition(host, (START + timedelta(hours=HOURS)).timestamp()) is None
    }
    for line in up:
        host = line.split("/")[3]
        assert line.endswith(" 0.0" if host in silent else " 1.0"), line
    assert 'gpusteward_job_runs_total{job="collect:fleet",outcome="ok"}' in metrics


def test_the_planted_breach_reaches_the_webhook_within_two_evaluation_intervals(live_run: LiveRun) -> None:
    breach = live_run.fleet.plan.breach
    assert breach is not None
    # The line may fire once the breach has lasted its `for` (10 minutes in the example config).
    due = datetime.fromtimestamp(breach[0], UTC) + timedelta(minutes=10)
    assert live_run.first_alert_at is not None, "no alert reached the webhook"
    latency = live_run.first_alert_at - due
    print(f"[breach -> webhook] {latency} after the breach passed its 'for'; evaluation interval {EVALUATE_EVERY}")
    assert timedelta(0) <= latency <= 2 * EVALUATE_EVERY
    bodies = [json.loads(b) for b in live_run.webhook.bodies]
    names = {a["labels"]["alertname"] for body in bodies for a in body["alerts"]}
    assert "InferenceReserveBreach" in names
