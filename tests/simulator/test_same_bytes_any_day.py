"""A small fleet's files hold the recorded bytes, whatever the date the simulator runs on.

The date sweep (`tests/dates.py`) runs this module under each of its moments: a simulator that read
the wall clock (a file name, a timestamp, a seed) would write other bytes on one of them. A gzip file's
digest is its text's: ISA-L, which compresses them, may pick other matches on another CPU (the same text,
other compressed bytes), and tests/simulator/test_files.py checks the gzip headers. The recorded digests
change only when the simulator does: `UPDATE_GOLDEN=1` rewrites them and prints the diff
(tests/reports/golden.py).
"""

from __future__ import annotations

import gzip
import hashlib
import json
from datetime import date
from pathlib import Path

from simulator import simulate
from tests.reports.golden import assert_golden

GOLDEN = Path(__file__).parent / "golden"


def test_a_small_fleet_writes_the_recorded_bytes(tmp_path: Path) -> None:
    # Two days over a month end: the sacct files split by month and the squeue/assoc snapshots by day.
    simulate(tmp_path, date(2026, 10, 31), 2, 11, nodes=2)
    digests = {
        p.relative_to(tmp_path).as_posix(): hashlib.sha256(_text_bytes(p)).hexdigest()
        for p in sorted(tmp_path.rglob("*"))
        if p.is_file()
    }
    assert len(digests) > 5
    assert_golden("small-fleet.sha256.json", json.dumps(digests, indent=1, sort_keys=True) + "\n", golden_dir=GOLDEN)


def _text_bytes(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()
