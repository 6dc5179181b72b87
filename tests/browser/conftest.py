"""A real browser (Debian chromium, driven by Playwright) against the dashboard over a published read model."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

import pytest

from dashboards.data import pool_gpus, team_names
from gpusteward.config import example_config_path, load_config
from gpusteward.domain import Month
from service.dashboard import start_dashboard
from service.importer import import_files
from service.pipeline import evaluate, raise_alerts
from simulator import simulate
from tests.browser.figures import Month as MonthShown
from tests.real import missing, require_binary, stop
from tests.simulated import SIMULATED
from warehouse import open_warehouse
from warehouse.readmodel import publish, snapshot

SCREENS_COPY = Path("/tmp/gs-screens")
MONTH = Month(2026, 10)


@dataclass(frozen=True)
class Dashboard:
    url: str
    shots: Path
    month: MonthShown
    root: Path  # gpusteward.toml and readmodel/ (another dashboard may serve them too)


@pytest.fixture(scope="package")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    """Two simulated days of the demo fleet, imported, evaluated and published; the dashboard serving them."""
    root = tmp_path_factory.mktemp("browser")
    shutil.copyfile(example_config_path(), root / "gpusteward.toml")
    config = load_config(root / "gpusteward.toml")
    simulate(root / "data", date(2026, 10, 1), 2, 7, nodes=8)
    with open_warehouse(config.resolve(config.warehouse.path)) as wh:
        import_files(wh, [root / "data"], ignore=SIMULATED)
        raise_alerts(wh, config, evaluate(wh, config, MONTH), datetime(2026, 10, 3, tzinfo=UTC))
        publish(snapshot(wh, tz=config.timezone), root / "readmodel")
        shown = MonthShown(
            wh.month_outputs(MONTH), wh.alerts(MONTH), wh.plans(MONTH), pool_gpus(config) or 0, team_names(config)
        )
    process, url = start_dashboard(None, str(root / "gpusteward.toml"), read_model=str(root / "readmodel"))
    try:
        yield Dashboard(url.rstrip("/"), tmp_path_factory.mktemp("screens"), shown, root)
    finally:
        stop_dashboard(process)


def stop_dashboard(process: subprocess.Popen[bytes]) -> None:
    stop(process)
    if process.stderr is not None:
        process.stderr.close()


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    # Package scope: Playwright's sync API keeps an event loop running in this thread until it
    # stops, which would break every later test that calls asyncio.run().
    chromium = require_binary("chromium", package="chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        missing("playwright (Python)", "pip install playwright==1.65.2; never `playwright install`")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=chromium,
                              args=["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"])
        yield b
        b.close()


def keep_copy(path: Path) -> None:
    """A copy under /tmp/gs-screens for people to look at after the run."""
    SCREENS_COPY.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(path, SCREENS_COPY / path.name)
