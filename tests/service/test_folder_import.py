"""The folder import remembers what it read in the warehouse: a restart reads only new or changed files."""

from __future__ import annotations

import os
from datetime import UTC, datetime, timedelta
from pathlib import Path

from service.metrics import ServiceMetrics
from service.tasks import FolderImport, Shared
from tests.collectors.synthetic import dcgm_dump
from warehouse import Warehouse, open_warehouse

NOW = datetime(2026, 11, 2, tzinfo=UTC)


def _job(wh: Warehouse, folder: Path) -> FolderImport:
    return FolderImport("import:in", timedelta(0), [folder], wh, Shared(), ServiceMetrics())


def _files_read(job: FolderImport) -> int:
    return int(job.run(NOW).detail.split(" files")[0])


def test_a_restarted_import_reads_only_new_or_changed_files(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.om").write_text(dcgm_dump(hosts=1, gpus=2, minutes=3, seed=1))
    (folder / "b.om").write_text(dcgm_dump(hosts=2, gpus=2, minutes=3, seed=2))
    (folder / "broken.om").write_text('DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n"} oops\n# EOF\n')
    db = tmp_path / "w.duckdb"
    with open_warehouse(db) as wh:
        assert _files_read(_job(wh, folder)) == 3
        rows = wh.count("gpu_minutes")
        assert rows > 0
    with open_warehouse(db) as wh:  # the service restarted
        job = _job(wh, folder)
        assert _files_read(job) == 0
        (folder / "c.om").write_text(dcgm_dump(hosts=1, gpus=1, minutes=2, seed=3))
        (folder / "a.om").write_text(dcgm_dump(hosts=1, gpus=2, minutes=4, seed=1))  # grew
        assert _files_read(job) == 2
        assert _files_read(job) == 0
        assert wh.count("gpu_minutes") > rows
        failed = wh.query("SELECT status FROM imported_files WHERE path LIKE '%broken.om'")
        assert failed["status"].to_list() == ["failed"]


def test_a_file_signature_is_stored_with_its_import_run(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "a.om"
    path.write_text(dcgm_dump(hosts=1, gpus=1, minutes=2))
    os.utime(path, (1_000_000_000, 1_000_000_000))
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        _files_read(_job(wh, folder))
        remembered = wh.imported_files()[str(path)]
        assert (remembered.mtime, remembered.size) == (1_000_000_000.0, path.stat().st_size)
        stored = wh.query("SELECT count(*) AS n FROM import_runs WHERE source = ? AND status = 'ok'", [str(path)])
        assert stored["n"].to_list() == [1]
