"""A warehouse is copied beside itself before a pending migration changes it (warehouse/backup.py)."""

from __future__ import annotations

from collections import namedtuple
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import pytest

from warehouse import backup, open_warehouse
from warehouse import migrate as migrations


def _older_warehouse(path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[int, int]:
    """A warehouse one migration behind the shipped ones, holding one GPU: (its version, the latest)."""
    shipped = migrations.available()
    with monkeypatch.context() as m:
        m.setattr(migrations, "available", lambda: shipped[:-1])
        with open_warehouse(path) as wh:
            wh.connection.execute("INSERT INTO gpus (cluster, host, gpu) VALUES ('east', 'h1', 0)")
    return shipped[-2][0], shipped[-1][0]


def _version_and_gpus(path: Path) -> tuple[int, int]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        version = con.execute("SELECT max(number) FROM schema_migrations").fetchall()[0][0]
        gpus = con.execute("SELECT count(*) FROM gpus").fetchall()[0][0]
    finally:
        con.close()
    return int(version), int(gpus)


def test_an_upgrade_copies_the_file_first_and_the_copy_is_the_old_warehouse(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(backup.SKIP_ENV, raising=False)
    path = tmp_path / "w.duckdb"
    older, latest = _older_warehouse(path, monkeypatch)
    assert list(tmp_path.glob("*.bak")) == []  # a new file has nothing to back up
    with open_warehouse(path):
        pass
    copies = list(tmp_path.glob("*.bak"))
    assert [c.name.split(".")[2] for c in copies] == [f"before-{latest:03d}"]
    assert _version_and_gpus(copies[0]) == (older, 1)  # the old schema, with its rows
    assert _version_and_gpus(path) == (latest, 1)
    with open_warehouse(path):  # nothing pending: no second copy
        pass
    assert list(tmp_path.glob("*.bak")) == copies
    assert list(tmp_path.glob("*.partial")) == []


def test_a_disk_too_full_for_the_copy_refuses_to_migrate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(backup.SKIP_ENV, raising=False)
    path = tmp_path / "w.duckdb"
    older, _latest = _older_warehouse(path, monkeypatch)
    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr("warehouse.backup.shutil.disk_usage", lambda _p: usage(10**9, 10**9 - 100, 100))
    with pytest.raises(OSError, match=f"only 100 are free.*{backup.SKIP_ENV}=1"):
        open_warehouse(path).__enter__()
    assert _version_and_gpus(path) == (older, 1)
    assert list(tmp_path.glob("*.bak")) == []


def test_the_copy_can_be_switched_off_for_volumes_backed_up_otherwise(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "w.duckdb"
    _older, latest = _older_warehouse(path, monkeypatch)
    monkeypatch.setenv(backup.SKIP_ENV, "1")
    with open_warehouse(path):
        pass
    assert _version_and_gpus(path) == (latest, 1)
    assert list(tmp_path.glob("*.bak")) == []


def test_copies_made_in_the_same_second_keep_each_other(tmp_path: Path) -> None:
    path = tmp_path / "w.duckdb"
    at = datetime(2026, 12, 2, 5, 30, 12, tzinfo=UTC)
    first = backup.backup_path(path, 27, at)
    assert first.name == "w.duckdb.before-027.20261202T053012Z.bak"
    first.touch()
    assert backup.backup_path(path, 27, at).name == "w.duckdb.before-027.20261202T053012Z-2.bak"
