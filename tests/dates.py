"""Run the tests that build simulated fleets and months under other dates and time zones.

The sweep runs the tests in SWEEP once per moment in MOMENTS, each in a pytest process whose wall clock,
and every Python child's, starts at that moment and runs on (time-machine, started by
tests/timetravel/sitecustomize.py). A test whose data or verdict depends on today's date fails on one of
them. Real components (Prometheus, Alertmanager, Slurm) keep the machine's clock, so their tests stay out;
tests/test_suite_rules.py keeps wall-clock reads out of the tests themselves.

The main run holds the sweep: tests/test_dates.py runs each moment as one test, so the sweep's processes
share the cores with the rest of the suite instead of running in a stage of their own that pytest waited
for (the whole run now keeps both cores busy: docs/testing.md), and `leave_out_swept` keeps the swept
tests out of that run (they pass under four moments; a fifth run at today's date would add nothing).
`python -m tests.dates [PYTEST ARGS]` runs the sweep on its own; `--list` prints SWEEP.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING
from zoneinfo import ZoneInfo

if TYPE_CHECKING:
    import pytest

ROOT = Path(__file__).resolve().parents[1]
SITECUSTOMIZE = Path(__file__).resolve().parent / "timetravel"


@dataclass(frozen=True)
class Moment:
    when: str  # local time in `tz`
    tz: str
    why: str
    whole: bool = True  # the whole SWEEP; False: all but HEAVY

    def iso(self) -> str:
        return datetime.fromisoformat(self.when).replace(tzinfo=ZoneInfo(self.tz)).isoformat()


MOMENTS = (
    Moment("2026-12-31 23:59:00", "UTC", "the year turns during the run", whole=False),
    Moment("2027-02-28 12:00:00", "UTC", "the last day of a short February", whole=False),
    Moment("2028-02-29 12:00:00", "UTC", "a leap day", whole=False),
    Moment("2027-03-14 01:58:00", "America/New_York", "clocks spring forward at 02:00 local during the run"),
)

SWEEP = (
    "tests/simulator/test_same_bytes_any_day.py",
    "tests/collectors/test_collect_cli.py",
    "tests/collectors/test_scrape.py",
    "tests/alerts/test_cli_alerts.py",
    "tests/alerts/test_outbox.py",
    "tests/faults/test_service_faults.py::test_kill_9_of_the_service_mid_import_then_restart_loses_and_doubles_nothing",
    "tests/service/test_import_errors.py",
    "tests/service/test_folder_import.py",
    "tests/service/test_serve.py",
    "tests/service/test_serve_api.py",
    "tests/service/test_serve_gpu_series.py",
    "tests/service/test_grafana_dashboard_real.py",
    "tests/service/test_schedule.py",
    "tests/warehouse/test_outbox.py",
    "tests/quota/test_workflow.py",
)
"""Tests that simulate a fleet, scrape a live one, or hand a clock to the service, the alert engine or quota.

The simulator is swept through one test that compares a small fleet's bytes with recorded digests: any
clock read shows there (its Slurm records are the scheduler's output), so the simulator's other tests (the
month-sized test_files and test_planted: 4-5 minutes per moment on two cores; the scheduler's invariants,
whose fixtures simulate three days and schedule a month: 14 s per moment) run once, in the main run."""

HEAVY = (
    "tests/service/test_serve.py",
    "tests/service/test_serve_api.py",
    "tests/service/test_serve_gpu_series.py",
    "tests/faults/test_service_faults.py::test_kill_9_of_the_service_mid_import_then_restart_loses_and_doubles_nothing",
    "tests/service/test_grafana_dashboard_real.py",
)
"""Swept tests that run the whole service for minutes (a simulated day; a real `serve` killed and restarted).
The first two run the service on a FakeClock, so the wall clock reaches them only where something reads it by mistake:
they run under the DST change in America/New_York (a local zone that is not UTC, and a local hour that does not
exist), while the year's turn and 28 and 29 February sweep the rest, whose tests read the same clock through
the same code. Sweeping these under one moment instead of four keeps the suite inside its 25 minutes.
The control API's tests, the GPU series' and the Grafana dashboard's (a real Prometheus scraping it, on the
machine's clock: the service's /metrics carry no timestamps) read the served day too, so they run beside
test_serve, after it (the API's tests approve its plan and silence an alert), and the day is built once in the
whole run instead of once here and once in the main run."""


_CHILD_OF_A_WORKER = ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID",
                      "PYTEST_CURRENT_TEST")
"""A pytest-xdist worker's variables: a sweep started from one is a pytest run of its own."""


def environment(moment: Moment, base: Mapping[str, str]) -> dict[str, str]:
    """`base` with the moment's zone and wall clock, for a pytest process of the sweep."""
    path = os.pathsep.join(p for p in (str(SITECUSTOMIZE), base.get("PYTHONPATH", "")) if p)
    env = {k: v for k, v in base.items() if k not in _CHILD_OF_A_WORKER}
    return {**env, "TZ": moment.tz, "GPUSTEWARD_TEST_NOW": moment.iso(), "PYTHONPATH": path}


def command(moment: Moment, pytest_args: list[str]) -> list[str]:
    """The pytest command line of the moment's run: the whole SWEEP, or all but HEAVY."""
    # sitecustomize imports time_machine before pytest starts, too early for its plugin's assert rewriting.
    early = "ignore:Module already imported so cannot be rewritten; time_machine:pytest.PytestAssertRewriteWarning"
    return [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-W", early, "-q", "--no-header",
            *pytest_args, *(SWEEP if moment.whole else [t for t in SWEEP if t not in HEAVY])]


def title(moment: Moment) -> str:
    left_out = "" if moment.whole else "; the HEAVY ones left out"
    return f"tests under {moment.when} {moment.tz} ({moment.why}{left_out})"


def swept(nodeid: str) -> bool:
    """Whether the test is one of SWEEP's (a module of it, or a test named there)."""
    return any(nodeid == t or nodeid.startswith((f"{t}::", f"{t}[")) for t in SWEEP)


SWEEP_TESTS = "tests/test_dates.py::"
"""The main run's tests that run the sweep, one per moment."""


def leave_out_swept(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a run that sweeps (it holds tests/test_dates.py's tests), leave SWEEP's tests out of it."""
    if os.environ.get("GPUSTEWARD_TEST_NOW") or not any(i.nodeid.startswith(SWEEP_TESTS) for i in items):
        return
    left_out = [i for i in items if swept(i.nodeid)]
    if left_out:
        config.hook.pytest_deselected(items=left_out)
        items[:] = [i for i in items if not swept(i.nodeid)]


def run(moment: Moment, pytest_args: list[str]) -> int:
    workers = ["-n", os.environ.get("GPUSTEWARD_TEST_WORKERS", "4"), "--dist", "loadscope"]
    print(f"== {title(moment)}", flush=True)
    return subprocess.run(command(moment, [*workers, *pytest_args]), cwd=ROOT, env=environment(moment, os.environ),
                          check=False).returncode


def main(argv: list[str]) -> int:
    if argv == ["--list"]:
        print("\n".join(SWEEP))
        return 0
    failed = [m for m in MOMENTS if run(m, argv) != 0]
    for m in failed:
        print(f"FAILED under {m.when} {m.tz} ({m.why})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
