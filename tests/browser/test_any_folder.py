"""`gpusteward dashboard` started from the demo's output folder, whose `reports/`, `alerts/` and `warehouse/`
folders are named like the product's packages, shows the month (it used to fail on the catalogue)."""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from dashboards.texts import Texts
from gpusteward.config import load_config
from gpusteward.domain import Month
from tests.browser.browsing import TIMEOUT_MS, no_errors, rendered
from tests.browser.conftest import Dashboard
from tests.service.dashboard_process import shadowing_folder, start_cli_dashboard


def test_the_dashboard_runs_from_a_folder_that_shadows_its_packages(
    browser: Any, dashboard: Dashboard, tmp_path: Path
) -> None:
    from playwright.sync_api import expect

    config_path = dashboard.root / "gpusteward.toml"
    config = load_config(config_path)
    folder = shadowing_folder(tmp_path / "demo-out")
    process, port = start_cli_dashboard(folder, config_path, Path(config.resolve(config.warehouse.path)))
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="en")
    try:
        page = context.new_page()
        page.goto(f"http://127.0.0.1:{port}/", wait_until="domcontentloaded")
        tx = Texts("en")
        expect(page.get_by_role("heading", name=tx("page.title", month=tx.fmt.month(Month(2026, 10)))).first
               ).to_be_visible(timeout=TIMEOUT_MS)
        rendered(page)
        no_errors(page, "overview from the demo's output folder")
    finally:
        context.close()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=30)
        if process.stdout is not None:
            process.stdout.close()
