"""Exit codes are sacct's ExitCode `return code:signal`, stored the same from `sacct --json` and `sacct -P`.

Slurm records a job's wait status: a process a signal ended has no return code (`sacct -P` prints
`0:9`, the JSON of 23.02 on `status: SIGNALED`, `return_code.set: false`, `signal.id: 9`); a
script that exits 137 itself is `137:0`. Both readers store (exit_code, exit_signal) = (None, 9)
and (137, None) for those, and the JSON reader used to store null where the `-P` reader stored 137.
The live check of one SIGKILL-ended job through every path is tests/realslurm/test_slurm_nested.py.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from collectors.sacct import exit_text, read_sacct
from collectors.slurm.sacct_text import read_sacct_text
from tests.collectors.slurm.test_sacct_text import HEADER

DATA = Path(__file__).parents[2] / "data"
SLURMDB = DATA / "scheduler" / "slurm"


def _record(path: Path) -> dict[str, Any]:
    doc: dict[str, Any] = json.loads(path.read_text())
    return doc


def _json_exit(doc: dict[str, Any]) -> tuple[int | None, int | None]:
    jobs, _, problems = read_sacct(doc, source="json")
    assert problems == []
    code, signal = jobs.select("exit_code", "exit_signal").row(0)
    return code, signal


def _text_exit(exit_code: str) -> tuple[int | None, int | None]:
    """The nested capture's first `sacct -P` line with its ExitCode replaced."""
    cols = HEADER.split("|")
    line = (DATA / "slurm-22.05-nested" / "sacct-P.txt").read_text().splitlines()[1].split("|")
    line[cols.index("ExitCode")] = exit_code
    jobs, _, problems = read_sacct_text([HEADER, "|".join(line)], source="p")
    assert problems == []
    code, signal = jobs.select("exit_code", "exit_signal").row(0)
    return code, signal


@pytest.mark.parametrize("release", ["23.11-v0.0.40", "24.05-v0.0.41", "25.11-v0.0.44"])
def test_a_signalled_record_reads_as_its_ps_dump_prints_it(release: str) -> None:
    """The captured TIMEOUT job's batch step ended by SIGTERM (`status: SIGNALED`, signal 15); as the
    job's own exit status it reads as `sacct -P`'s `0:15` does; the job itself is `0:0`."""
    doc = _record(SLURMDB / release / "slurmdb-job-timeout.json")
    assert _json_exit(doc) == _text_exit("0:0") == (0, None)
    signalled = copy.deepcopy(doc)
    job = signalled["jobs"][0]
    job["exit_code"] = job["steps"][0]["exit_code"]  # the step's real SIGNALED status, as the job's
    assert job["exit_code"]["status"] == ["SIGNALED"]
    assert _json_exit(signalled) == _text_exit("0:15") == exit_text("0:15") == (None, 15)


def test_a_failed_record_keeps_its_return_code_in_both() -> None:
    doc = _record(SLURMDB / "23.11-v0.0.40" / "slurmdb-job-failed.json")
    assert _json_exit(doc) == _text_exit("1:0") == (1, None)


def test_a_script_that_exits_137_is_not_a_signal() -> None:
    assert _text_exit("137:0") == (137, None)
    assert _text_exit("0:9") == (None, 9)


def test_22_05_json_misreports_and_is_unknown() -> None:
    """Slurm 22.05's JSON says 0 for every job; the nested capture's job that exits 3 reads as unknown there."""
    doc = _record(DATA / "slurm-22.05-nested" / "sacct.json")
    jobs, _, _ = read_sacct(doc, source="json")
    assert jobs["exit_code"].null_count() == jobs["exit_signal"].null_count() == jobs.height


@pytest.mark.parametrize("text", ["9", "0:", "256:0", "0:128", "-1:0", "a:b"])
def test_bad_exit_text_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"code:signal|out of range"):
        exit_text(text)
