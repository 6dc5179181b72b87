"""A real browser (Debian chromium, driven by Playwright) against the dashboard over a published read model."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.browser.browsing import chromium
from tests.browser.figures import Shown
from tests.browser.fleet import Published, serving, simulated_month, stop_dashboard
from tests.browser.shots import keep_copy

__all__ = ["Dashboard", "keep_copy", "stop_dashboard"]


@dataclass(frozen=True)
class Dashboard:
    url: str
    shots: Path
    month: Shown
    root: Path  # gpusteward.toml and readmodel/ (another dashboard may serve them too)
    published: Published


@pytest.fixture(scope="package")
def dashboard(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Dashboard]:
    """Two simulated days of the demo fleet, imported, evaluated and published; the dashboard serving them
    with its clock fixed (tests/browser/fleet.py)."""
    published = simulated_month(tmp_path_factory.mktemp("browser"), days=2, nodes=8)
    with serving(published) as url:
        yield Dashboard(url, tmp_path_factory.mktemp("screens"), published.shown, published.root, published)


@pytest.fixture(scope="package")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    # Package scope: Playwright's sync API keeps an event loop running in this thread until it
    # stops, which would break every later test that calls asyncio.run().
    with chromium(tmp_path_factory.mktemp("fontconfig")) as b:
        yield b
