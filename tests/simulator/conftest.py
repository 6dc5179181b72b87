"""Simulated outputs shared by the simulator tests: small runs, written once per session."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path
from typing import Any

import pytest

from simulator import Manifest, simulate
from simulator.fleet import build_fleet
from simulator.plan import make_plan
from simulator.run import schedule_fleet
from simulator.write_slurm import sacct_json

START = date(2026, 10, 1)


@pytest.fixture(scope="session")
def short_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Manifest]:
    """Three days on six nodes: the reserve breach (day 2) and the exporter outage (day 3) both fit."""
    out = tmp_path_factory.mktemp("short")
    return out, simulate(out, START, 3, 11, nodes=6)


@pytest.fixture(scope="session")
def month_runs() -> list[dict[str, Any]]:
    """Every sacct record of the default demo month (31 days, 8 nodes, seed 7), as written, without
    the telemetry: the month's scheduling takes seconds, its files a minute."""
    fleet = build_fleet(8)
    plan = make_plan(fleet, START, 31, 7)
    world = schedule_fleet(fleet, plan)
    records: list[dict[str, Any]] = []
    for cluster in fleet.clusters:
        text = sacct_json(world.runs[cluster.name], cluster, plan.start_s, plan.end_s, plan.end_s)
        records += json.loads(text)["jobs"]
    return records
