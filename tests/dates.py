"""Run the tests that build simulated fleets and months under other dates and time zones.

`python -m tests.dates [PYTEST ARGS]` runs the tests in SWEEP once per moment in MOMENTS, each in
a pytest process whose clock (and every child's) libfaketime (Debian's `faketime`) starts at that
moment and lets run. A test whose data or verdict depends on today's date fails on one of them.
Real components written in Go (Prometheus, Alertmanager) read the clock without libc, so their
tests stay out; tests/test_suite_rules.py keeps wall-clock reads out of the tests themselves.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


@dataclass(frozen=True)
class Moment:
    when: str  # local time in `tz`, as faketime's absolute start
    tz: str
    why: str


MOMENTS = (
    Moment("2026-12-31 23:58:00", "UTC", "the year turns during the run"),
    Moment("2027-02-28 12:00:00", "UTC", "the last day of a short February"),
    Moment("2028-02-29 12:00:00", "UTC", "a leap day"),
    Moment("2027-03-14 01:58:00", "America/New_York", "clocks spring forward at 02:00 local during the run"),
    Moment("2027-11-07 01:30:00", "Europe/Berlin", "a day after Berlin's autumn change, far from any demo month"),
)

SWEEP = (
    "tests/simulator",
    "tests/collectors/test_collect_cli.py",
    "tests/collectors/test_scrape.py",
    "tests/alerts/test_cli_alerts.py",
    "tests/alerts/test_outbox.py",
    "tests/faults/test_ingest_faults.py",
    "tests/service/test_import_errors.py",
    "tests/service/test_folder_import.py",
    "tests/service/test_serve.py",
    "tests/service/test_schedule.py",
    "tests/warehouse/test_outbox.py",
    "tests/quota/test_workflow.py",
)
"""Tests that simulate a fleet, scrape a live one, or hand a clock to the service, the alert engine or quota."""


def faketime() -> str:
    found = shutil.which("faketime")
    if found is None:
        raise SystemExit("faketime is not installed (apt-get install faketime; ./dev test installs it)")
    return found


def run(moment: Moment, pytest_args: list[str]) -> int:
    env = {
        **os.environ,
        "TZ": moment.tz,
        "FAKETIME_DONT_FAKE_MONOTONIC": "1",  # timeouts and durations keep real seconds
    }
    command = [faketime(), "-m", "-f", f"@{moment.when}", sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
               "-q", "--no-header", *pytest_args, *SWEEP]
    print(f"== tests under {moment.when} {moment.tz} ({moment.why})", flush=True)
    return subprocess.run(command, cwd=ROOT, env=env, check=False).returncode


def main(argv: list[str]) -> int:
    failed = [m for m in MOMENTS if run(m, argv) != 0]
    for m in failed:
        print(f"FAILED under {m.when} {m.tz} ({m.why})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
