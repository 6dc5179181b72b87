"""`kill -9` of the service while its writer drains the spool, then a restart: nothing the spool
acknowledged is lost, nothing is stored twice.

The service runs as its own process (tests/faults/spooled.py) with a synthetic live source every
0.2 s; its writer stops at a known point of its third batch, either with the batch's rows written
and the transaction open (`commit`), or committed with the spool file not yet removed (`remove`),
while the collection lane goes on spooling. The test kills it there with SIGKILL, restarts it, lets
it drain, and checks every acknowledged batch against the warehouse.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from service.spool import BATCH, spool_beside
from tests.faults.counting import wait_for_marker
from warehouse import open_warehouse

ROOT = Path(__file__).resolve().parents[2]
DEADLINE_S = 300  # a bound on waiting for the service, so a hang fails instead of blocking CI
GPUS_PER_BATCH = 8  # tests.service.spool_batches.minute_batch's default


def _start(root: Path, point: str, first: int) -> subprocess.Popen[bytes]:
    with (root / "serve.log").open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.faults.spooled", str(root), point, "3", str(first)],
            stdout=log, stderr=subprocess.STDOUT, cwd=ROOT,
        )


def _waiting(root: Path) -> list[str]:
    return sorted(p.name.removesuffix(BATCH) for p in spool_beside(root / "gpusteward.duckdb").glob(f"*{BATCH}"))


def _acked(root: Path) -> list[str]:
    path = root / "acked"
    return path.read_text(encoding="utf-8").split() if path.exists() else []


def _log(root: Path) -> str:
    return (root / "serve.log").read_text(errors="replace")[-3000:]


def _until(condition: object, proc: subprocess.Popen[bytes], root: Path, what: str) -> None:
    deadline = time.monotonic() + DEADLINE_S
    while not condition():  # type: ignore[operator]
        assert proc.poll() is None, f"the service exited before {what}:\n{_log(root)}"
        assert time.monotonic() < deadline, f"no {what} within {DEADLINE_S} s:\n{_log(root)}"
        time.sleep(0.1)


@pytest.mark.parametrize("point", ["commit", "remove"])
def test_kill_9_while_draining_loses_no_acknowledged_batch_and_doubles_none(tmp_path: Path, point: str) -> None:
    proc = _start(tmp_path, point, first=0)
    wait_for_marker(proc, tmp_path / "paused", DEADLINE_S, tmp_path / "serve.log")
    # The writer is stopped; collection goes on: more batches are acknowledged while it waits.
    # A batch's spool file exists before its append returns and the id reaches `acked`: count the acknowledged.
    _until(lambda: len(set(_waiting(tmp_path)) & set(_acked(tmp_path))) >= 5, proc, tmp_path,
           "batches spooled and acknowledged while the writer was stopped")
    os.kill(proc.pid, signal.SIGKILL)
    assert proc.wait(30) == -signal.SIGKILL, _log(tmp_path)
    acked = _acked(tmp_path)
    left = set(_waiting(tmp_path))
    assert len(acked) >= 7
    # The one append in flight at the kill may have left its file without hearing back: stored, never acknowledged.
    assert len(left - set(acked)) <= 1

    again = _start(tmp_path, "none", first=10_000)
    try:
        _until(lambda: not left & set(_waiting(tmp_path)), again, tmp_path, "drain of the first run's batches")
    finally:
        again.send_signal(signal.SIGTERM)
        try:
            again.wait(120)
        except subprocess.TimeoutExpired:
            again.kill()
            again.wait(10)
    assert again.returncode == 0, _log(tmp_path)
    with open_warehouse(tmp_path / "gpusteward.duckdb", read_only=True) as wh:
        batches = wh.query("SELECT batch_id FROM spool_batches")["batch_id"].to_list()
        runs = wh.query("SELECT count(*) AS n FROM import_runs WHERE source = 'scrape:synthetic' AND status = 'ok'")
        minutes = wh.count("gpu_minutes")
        distinct = wh.query("SELECT count(*) AS n FROM (SELECT DISTINCT gpu_key, ts FROM gpu_minutes)")["n"][0]
    assert set(acked) <= set(batches)  # every acknowledged batch is stored
    assert len(batches) == len(set(batches))
    assert runs["n"][0] == len(batches)  # each stored once: one import run per batch, none replayed as new
    assert minutes == distinct == GPUS_PER_BATCH * len(batches)  # every batch is a minute of its own
