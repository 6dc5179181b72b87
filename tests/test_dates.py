"""The date sweep (tests/dates.py) as part of the main run: one test per moment, each a pytest run of SWEEP's
tests with the wall clock moved to that moment. The swept tests are left out of the main run itself
(`dates.leave_out_swept`)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from tests.dates import MOMENTS, ROOT, Moment, command, environment, title

pytestmark = pytest.mark.slow  # five minutes on one worker: scheduled first (tests/parallel.py)

HANG_S = 1800  # a sweep that has not ended by then hangs; the moments take one to three minutes


@pytest.mark.parametrize("moment", MOMENTS, ids=[f"{m.when[:10]}-{m.tz}" for m in MOMENTS])
def test_the_swept_tests_pass_under_another_date(moment: Moment, tmp_path: Path) -> None:
    # One process: the worker running it is one of the main run's, which keep both cores busy.
    args = ["-n", "0", "--basetemp", str(tmp_path / "basetemp")]
    ran = subprocess.run(command(moment, args), cwd=ROOT, env=environment(moment, os.environ),
                         capture_output=True, text=True, timeout=HANG_S, check=False)
    output = ran.stdout + ran.stderr
    assert ran.returncode == 0, f"{title(moment)} failed (exit {ran.returncode}):\n{output[-12000:]}"
    assert " passed" in output.splitlines()[-1], output[-2000:]
