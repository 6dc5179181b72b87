"""A simulated fleet's month, imported, evaluated and published as a read model, and the dashboard serving it
with its clock fixed, so every rendering of it is the same picture (tests/browser, bench/dashboard.py,
tests/browser/docs_images.py).

Every moment is fixed: the plan's creation, the alerts' tick and the read model's publication at the
end of the simulated days, and the dashboard's "now" (its data-age caption) half an hour later.
"""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta
from pathlib import Path

from dashboards.data import pool_gpus, team_names
from gpusteward.config import example_config_path, load_config
from gpusteward.config.schema import Config
from gpusteward.domain import Month
from service.dashboard import start_dashboard
from service.importer import import_files
from service.pipeline import evaluate, raise_alerts
from tests.browser.figures import Shown
from tests.real import stop
from tests.simulated import SIMULATED
from warehouse import Warehouse, open_warehouse
from warehouse.readmodel import publish, snapshot

START = date(2026, 10, 1)
MONTH = Month(START.year, START.month)
SEED = 7
VIEWED_AFTER = timedelta(minutes=30)


@dataclass(frozen=True)
class Published:
    """`root` holds gpusteward.toml, the warehouse file and readmodel/."""

    root: Path
    published_at: datetime
    shown: Shown

    @property
    def config_path(self) -> Path:
        return self.root / "gpusteward.toml"

    @property
    def read_model(self) -> Path:
        return self.root / "readmodel"

    @property
    def now(self) -> datetime:
        """The dashboard's clock."""
        return self.published_at + VIEWED_AFTER


def simulated_month(root: Path, *, days: int, nodes: int) -> Published:
    """`days` simulated days from 2026-10-01 of `nodes` nodes (seed 7), imported, evaluated and published."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(example_config_path(), root / "gpusteward.toml")
    config = load_config(root / "gpusteward.toml")
    simulate_into(root / "data", days=days, nodes=nodes)
    with open_warehouse(config.resolve(config.warehouse.path)) as wh:
        import_files(wh, [root / "data"], ignore=SIMULATED)
        return evaluated(wh, root, config, end_of(days))


def end_of(days: int) -> datetime:
    """The moment the simulated days end: where the month is evaluated and published."""
    return datetime.combine(START + timedelta(days=days), time(), UTC)


def simulate_into(folder: Path, *, days: int, nodes: int) -> None:
    from simulator import simulate

    simulate(folder, START, days, SEED, nodes=nodes)


def evaluated(wh: Warehouse, root: Path, config: Config, at: datetime) -> Published:
    """Evaluate the month in `wh` at `at` (the plan's creation, the alerts' tick), publish it to root/readmodel."""
    outputs = evaluate(wh, config, MONTH, now=at)
    raise_alerts(wh, config, outputs.month, outputs.episodes, at)
    publish(snapshot(wh, now=at, config=config), root / "readmodel")  # as `gpusteward serve` publishes
    return shown_from(wh, root, config, at)


def shown_from(wh: Warehouse, root: Path, config: Config, at: datetime) -> Published:
    """What the month published at `at` from `wh` should show."""
    db = Path(config.resolve(config.warehouse.path))
    shown = Shown(wh.month_outputs(MONTH), wh.alerts(MONTH), wh.plans(MONTH), pool_gpus(config) or 0,
                  team_names(config), config, db)
    return Published(root, at, shown)


def reopened(root: Path, at: datetime) -> Published:
    """A month evaluated into `root` before (by `simulated_month` or `evaluated`), published again, so the read
    model is what this version of the code publishes."""
    config = load_config(root / "gpusteward.toml")
    with open_warehouse(config.resolve(config.warehouse.path)) as wh:
        publish(snapshot(wh, now=at, config=config), root / "readmodel")
        return shown_from(wh, root, config, at)


@contextmanager
def serving(published: Published, *app_args: str) -> Iterator[str]:
    """The dashboard over `published`'s read model, its clock at `published.now`; its URL without the slash."""
    with serving_process(published, *app_args) as (url, _process):
        yield url


@contextmanager
def serving_process(published: Published, *app_args: str) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`serving`, with the Streamlit server's process (bench/dashboard.py reads its CPU time)."""
    process, url = start_dashboard(None, str(published.config_path), read_model=str(published.read_model),
                                   app_args=["--now", published.now.isoformat(), *app_args])
    try:
        yield url.rstrip("/"), process
    finally:
        stop_dashboard(process)


def stop_dashboard(process: subprocess.Popen[bytes]) -> None:
    stop(process)
    if process.stderr is not None:
        process.stderr.close()
