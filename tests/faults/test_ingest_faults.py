"""Ingest faults: `kill -9` of an import mid-way, and a full disk under the warehouse.

Either way, no committed row is lost or stored twice: after re-running the import, every table
holds exactly what a clean import of the same files holds.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from service.importer import import_files
from tests.configs import example_config_in
from tests.faults.counting import counts, small_fleet, wait_for_marker
from tests.simulated import MANIFEST_FILE, SIMULATED
from warehouse import ingest as ingest_module
from warehouse import open_warehouse

pytestmark = pytest.mark.slow  # minutes: scheduled first (tests/parallel.py)

IMPORT = "from service.cli import main; main()"
ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 300  # a bound on reaching the pause, so a hang fails instead of blocking CI


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return small_fleet(tmp_path_factory.mktemp("fleet"))


@pytest.fixture(scope="module")
def clean_counts(fleet: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    db = tmp_path_factory.mktemp("clean") / "w.duckdb"
    with open_warehouse(db) as wh:
        import_files(wh, [fleet], ignore=SIMULATED)
    return counts(db)


def _import(db: Path, fleet: Path, log: Path, *, paused_at: tuple[Path, int] | None = None) -> subprocess.Popen[bytes]:
    args = ["import", "--config", example_config_in(db.parent), "--db", str(db), "--ignore", MANIFEST_FILE, str(fleet)]
    head = ["-m", "tests.faults.paused", str(paused_at[0]), str(paused_at[1])] if paused_at else ["-c", IMPORT]
    with log.open("ab") as out:
        return subprocess.Popen([sys.executable, *head, *args], stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)


def test_kill_9_mid_import_then_reimport_loses_and_doubles_nothing(
    fleet: Path, clean_counts: dict[str, int], tmp_path: Path
) -> None:
    db, marker, log = tmp_path / "w.duckdb", tmp_path / "paused", tmp_path / "import.log"
    # Two files' batches are committed, the third is written but not committed when the kill lands.
    proc = _import(db, fleet, log, paused_at=(marker, 3))
    wait_for_marker(proc, marker, DEADLINE_S, log)
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL
    partial = counts(db)  # what was committed before the kill, each GPU-minute once
    assert 0 < partial["gpu_minutes"] < clean_counts["gpu_minutes"], partial
    again = _import(db, fleet, log)
    assert again.wait(300) == 0, log.read_text(errors="replace")[-2000:]
    assert counts(db) == clean_counts


def test_injected_enospc_mid_batch_rolls_the_batch_back(
    fleet: Path, clean_counts: dict[str, int], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "w.duckdb"
    calls = {"n": 0}
    real = ingest_module.ingest_keyed

    def full_disk(con: duckdb.DuckDBPyConnection, table: str, frame: object) -> int:
        calls["n"] += 1
        if calls["n"] == 3:  # the third keyed write of the import: some batches are in, one is half-way
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(con, table, frame)  # type: ignore[arg-type]

    monkeypatch.setattr(ingest_module, "ingest_keyed", full_disk)
    with open_warehouse(db) as wh:
        summary = import_files(wh, [fleet], ignore=SIMULATED)
        failed = wh.query("SELECT count(*) AS n FROM import_runs WHERE status = 'failed'")["n"][0]
    assert any("No space left" in e for e in summary.errors), summary.errors
    assert failed == 1
    monkeypatch.setattr(ingest_module, "ingest_keyed", real)
    with open_warehouse(db) as wh:
        import_files(wh, [fleet], ignore=SIMULATED)
    assert counts(db) == clean_counts


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Path]:
    mount = tmp_path / "disk"
    mount.mkdir()
    command = ["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)]
    made = subprocess.run(command, capture_output=True, check=False)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {made.stderr.decode(errors='replace').strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(db: Path, fleet: Path) -> str:
    try:
        with open_warehouse(db) as wh:
            import_files(wh, [fleet], ignore=SIMULATED)
    except (duckdb.Error, OSError) as exc:
        return str(exc)
    raise AssertionError("the import fitted on the small disk")


def test_a_real_full_disk_leaves_the_warehouse_consistent(
    fleet: Path, clean_counts: dict[str, int], small_disk: Path
) -> None:
    db = small_disk / "w.duckdb"
    _fill(db, fleet)
    subprocess.run(["mount", "-o", "remount,size=256m", str(small_disk)], check=True)
    partial = counts(db)  # opens, replays what was committed, and holds no duplicate
    assert partial["gpu_minutes"] < clean_counts["gpu_minutes"]
    with open_warehouse(db) as wh:
        summary = import_files(wh, [fleet], ignore=SIMULATED)
    assert not summary.errors
    assert counts(db) == clean_counts


def test_a_full_disk_is_named_in_the_error(fleet: Path, small_disk: Path) -> None:
    error = _fill(small_disk / "w.duckdb", fleet)
    assert "space" in error.lower() or "disk" in error.lower(), error
