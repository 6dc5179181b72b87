"""Simulated outputs shared by the simulator tests: small runs, written once per session."""

from __future__ import annotations

from datetime import date
from pathlib import Path

import pytest

from simulator import Manifest, simulate

START = date(2026, 10, 1)


@pytest.fixture(scope="session")
def short_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Manifest]:
    """Three days on six nodes: the reserve breach (day 2) and the exporter outage (day 3) both fit."""
    out = tmp_path_factory.mktemp("short")
    return out, simulate(out, START, 3, 11, nodes=6)
