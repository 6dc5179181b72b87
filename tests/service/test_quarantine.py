"""Quarantine, not blockage: a file that cannot be read is recorded with its reason and never stops
the other files, the other folders or the later cycles of the service; nothing of it is half-stored."""

from __future__ import annotations

import json
import threading
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import service.importer
from collectors.batch import CollectedBatch
from collectors.files import read_file
from gpusteward.clock import FakeClock
from service.cli import cli
from service.jobs import Scheduler
from service.metrics import ServiceMetrics
from service.tasks import FolderImport, Shared
from tests.collectors.synthetic import dcgm_dump
from tests.configs import config_env
from warehouse import Warehouse, control, open_warehouse
from warehouse.control import ControlError

NOW = datetime(2026, 11, 2, tzinfo=UTC)
SACCT = Path(__file__).parents[1] / "data" / "scheduler" / "sacct_slurm_23_11_5.json"
ASSOC = "Cluster|Account|User|GrpTRES|Priority\neast|ml||gres/gpu=8|10\n"


def sacct_with(**time: object) -> str:
    """The captured sacct answer with its one job's `time` fields changed."""
    data = json.loads(SACCT.read_text(encoding="utf-8"))
    data["jobs"] = data["jobs"][:1]
    data["jobs"][0]["time"] |= time
    return json.dumps(data)


def folder_job(wh: Warehouse, folder: Path) -> FolderImport:
    return FolderImport("import:in", timedelta(0), [folder], wh, Shared(), ServiceMetrics())


def quarantined(wh: Warehouse) -> dict[str, str]:
    return {row["name"]: row["reason"] for row in wh.quarantined().iter_rows(named=True)}


def test_an_impossible_date_in_a_file_name_is_quarantined_and_the_folder_keeps_importing(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "assoc-20261399T250000Z.txt").write_text(ASSOC)
    (folder / "day1.om").write_text(dcgm_dump(hosts=1, gpus=2, minutes=3, seed=1))
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        job = folder_job(wh, folder)
        first = job.run(NOW)
        assert "1 failed" in first.detail
        stored = wh.count("gpu_minutes")
        assert stored > 0
        reason = quarantined(wh)["assoc-20261399T250000Z.txt"]
        assert "assoc-20261399T250000Z.txt" in reason
        assert "not a valid date" in reason
        # A later cycle: the poisoned file is not read again, a new good file is stored.
        (folder / "day2.om").write_text(dcgm_dump(hosts=2, gpus=2, minutes=3, seed=2))
        second = job.run(NOW)
        assert "failed" not in second.detail
        assert wh.count("gpu_minutes") > stored
        assert wh.quarantined()["attempts"].to_list() == [1]


def test_the_scheduled_import_job_succeeds_every_cycle_beside_a_poisoned_file(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "assoc-20261399T250000Z.txt").write_text(ASSOC)
    (folder / "sacct-submission0.json").write_text(sacct_with(submission=0, start=0, eligible=0))
    clock = FakeClock(NOW)
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        job = FolderImport("import:in", timedelta(minutes=5), [folder], wh, Shared(), ServiceMetrics())
        scheduler = Scheduler([job], clock, threading.Event())
        for day in range(3):  # a good day arrives each cycle
            start = 1_793_491_200 + 86_400 * day
            (folder / f"day{day}.om").write_text(dcgm_dump(hosts=1, gpus=2, minutes=3, start=start))
            scheduler.run_due()
            state = scheduler.states["import:in"]
            assert (state.failures, state.last_error) == (0, None)
            clock.advance(timedelta(minutes=5))
        assert wh.count("gpu_minutes") == 3 * 2 * 3
        assert "assoc-20261399T250000Z.txt" in quarantined(wh)  # the sacct job: quarantined, or a problem once
        assert wh.count("jobs") == 0  # the reader refuses it; either way it is never stored


def test_a_row_the_warehouse_refuses_rolls_back_that_file_only(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "sacct-bad.json").write_text(sacct_with(submission=0, start=0, eligible=0))
    (folder / "day1.om").write_text(dcgm_dump(hosts=1, gpus=2, minutes=3, seed=1))
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        for _ in range(2):  # every cycle: the good day stays stored, nothing of the bad file is
            folder_job(wh, folder).run(NOW)
            assert wh.count("gpu_minutes") > 0
            assert (wh.count("jobs"), wh.count("job_events")) == (0, 0)  # its one job has no submit time
            reason = quarantined(wh).get("sacct-bad.json")  # or, once the reader refuses it, a problem
            assert reason is None or ("sacct-bad.json" in reason and "refused its rows" in reason)
            failed_runs = wh.query("SELECT count(*) AS n FROM import_runs WHERE status = 'failed'")["n"][0]
            assert failed_runs <= 1


def test_rows_the_warehouse_refuses_are_rolled_back_and_quarantined(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A NOT NULL the reader let through: the file's transaction rolls back (its job events too) and
    the reason is the warehouse's own error, not the aborted-transaction error that followed it."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "sacct.json").write_text(SACCT.read_text(encoding="utf-8"))
    (folder / "day1.om").write_text(dcgm_dump(hosts=1, gpus=2, minutes=3, seed=1))

    def without_submit_time(path: Path, **kwargs: object) -> CollectedBatch:
        batch = read_file(path, **kwargs)  # type: ignore[arg-type]
        if "jobs" in batch.frames:
            jobs = batch.frames["jobs"].with_columns(pl.lit(None, pl.Datetime("us")).alias("submit_time"))
            batch.frames = {"job_events": batch.frames["job_events"], "jobs": jobs}  # events first: rolled back too
        return batch

    monkeypatch.setattr("service.importer.read_file", without_submit_time)
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        assert "1 failed" in folder_job(wh, folder).run(NOW).detail
        assert wh.count("gpu_minutes") > 0
        assert (wh.count("jobs"), wh.count("job_events")) == (0, 0)
        reason = quarantined(wh)["sacct.json"]
        assert "refused its rows" in reason
        assert "submit_time" in reason


def reading_a_fails(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, error: Exception) -> Path:
    """A folder of two good days, `a.om` and `b.om`, whose reader raises `error` on `a.om`."""
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.om").write_text(dcgm_dump(hosts=1, gpus=2, minutes=3, seed=1))
    (folder / "b.om").write_text(dcgm_dump(hosts=2, gpus=2, minutes=3, seed=2))

    def failing(path: Path, **kwargs: object) -> object:
        if path.name == "a.om":
            raise error
        return read_file(path, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr("service.importer.read_file", failing)
    return folder


def test_any_exception_of_a_reader_is_contained_to_its_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = reading_a_fails(tmp_path, monkeypatch, KeyError("gpu"))  # not the project's InputError: a reader bug
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        result = folder_job(wh, folder).run(NOW)
        assert "1 failed" in result.detail
        assert wh.count("gpu_minutes") > 0
        reason = quarantined(wh)["a.om"]
        assert "a.om" in reason
        assert "KeyError" in reason


def test_an_io_error_is_recorded_but_not_quarantined(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Permission denied or EIO is not the content's fault: a quarantine by content hash would outlive the fix."""
    folder = reading_a_fails(tmp_path, monkeypatch, PermissionError(13, "Permission denied"))
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        assert "1 failed" in folder_job(wh, folder).run(NOW).detail
        assert wh.count("gpu_minutes") > 0
        assert wh.quarantined().is_empty()
        failed = wh.query("SELECT problems FROM import_runs WHERE status = 'failed'")["problems"].to_list()
        assert len(failed) == 1
        assert "a.om: cannot read the file: Permission denied" in failed[0]


def test_import_stores_every_good_file_and_exits_nonzero_naming_the_bad_ones(tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    bad_sacct = tmp_path / "sacct-submission0.json"
    bad_sacct.write_text(sacct_with(submission=0, start=0, eligible=0))
    bad_name = tmp_path / "assoc-20261301T000000Z.txt"
    bad_name.write_text(ASSOC)
    good = tmp_path / "good-day.om"
    good.write_text(dcgm_dump(hosts=1, gpus=2, minutes=3, seed=1))
    args = ["import", "--db", str(db), str(bad_sacct), str(bad_name), str(good)]
    result = CliRunner(env=config_env(db.parent)).invoke(cli, args)
    assert result.exit_code == 1, result.output
    assert str(bad_name) in result.output
    assert "Traceback" not in result.output
    with open_warehouse(db) as wh:
        assert wh.count("gpu_minutes") > 0
        assert "assoc-20261301T000000Z.txt" in quarantined(wh)


def test_status_lists_quarantined_files_and_retry_reads_them_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "w.duckdb"
    path = tmp_path / "day.om"
    path.write_text(dcgm_dump(hosts=1, gpus=2, minutes=3, seed=1))

    def broken(p: Path, **_kwargs: object) -> object:
        raise RuntimeError("a reader bug, fixed by the next release")

    monkeypatch.setattr("service.importer.read_file", broken)
    first = CliRunner(env=config_env(db.parent)).invoke(cli, ["import", "--db", str(db), str(path)])
    assert first.exit_code == 1
    monkeypatch.setattr("service.importer.read_file", read_file)  # "upgraded"

    shown = CliRunner(env=config_env(db.parent)).invoke(cli, ["status", "--db", str(db)])
    assert shown.exit_code == 0, shown.output
    assert "quarantined" in shown.output
    assert "day.om" in shown.output
    assert "a reader bug" in shown.output
    zh_env = {**config_env(db.parent), "GPUSTEWARD_LANG": "zh"}
    in_chinese = CliRunner(env=zh_env).invoke(cli, ["status", "--db", str(db)])
    assert "隔离的文件：1 个" in in_chinese.output
    assert "quarantined files" not in in_chinese.output
    as_json = json.loads(CliRunner(env=config_env(db.parent)).invoke(cli, ["status", "--db", str(db), "--json"]).output)
    assert [q["name"] for q in as_json["quarantine"]] == ["day.om"]

    again = CliRunner(env=config_env(db.parent)).invoke(cli, ["import", "--db", str(db), str(path)])
    assert again.exit_code == 1  # unchanged and still quarantined: not read, named
    assert "quarantined" in again.output
    assert "--retry" in again.output

    retried = CliRunner(env=config_env(db.parent)).invoke(cli, ["import", "--retry", "--db", str(db), str(path)])
    assert retried.exit_code == 0, retried.output
    with open_warehouse(db) as wh:
        assert wh.count("gpu_minutes") > 0
        assert wh.quarantined().is_empty()


def test_a_changed_file_is_read_again_and_leaves_quarantine(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "day.om"
    path.write_text('DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n"} oops\n# EOF\n')
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        job = folder_job(wh, folder)
        job.run(NOW)
        assert list(quarantined(wh)) == ["day.om"]
        path.write_text(dcgm_dump(hosts=1, gpus=2, minutes=3, seed=1))  # fixed upstream
        assert "failed" not in job.run(NOW).detail
        assert wh.count("gpu_minutes") > 0
        assert wh.quarantined().is_empty()


def test_the_same_bad_content_under_the_same_name_is_not_read_again(tmp_path: Path) -> None:
    """Remembered by content hash and name: copied into a second folder, it is known at once."""
    one, two = tmp_path / "one", tmp_path / "two"
    one.mkdir()
    two.mkdir()
    bad = 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n"} oops\n# EOF\n'
    (one / "x.om").write_text(bad)
    (two / "x.om").write_text(bad)
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        folder_job(wh, one).run(NOW)
        folder_job(wh, two).run(NOW)
        entry = wh.quarantined().row(0, named=True)
        assert (wh.quarantined().height, entry["attempts"]) == (1, 1)
        runs = wh.query("SELECT count(*) AS n FROM import_runs WHERE status = 'failed'")["n"][0]
        assert runs == 1


def test_the_service_metrics_show_quarantined_files(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "x.om").write_text('DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n"} oops\n# EOF\n')
    metrics = ServiceMetrics()
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        FolderImport("import:in", timedelta(0), [folder], wh, Shared(), metrics).run(NOW)
    assert metrics.registry.get_sample_value("gpusteward_quarantined_files") == 1.0
    assert metrics.registry.get_sample_value("gpusteward_files_quarantined_total", {"source": "import:in"}) == 1.0


# -- which files an import reads ---------------------------------------------------------------


def test_files_matching_the_ignore_patterns_are_not_read(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    (folder / ".staging").mkdir(parents=True)
    day = dcgm_dump(hosts=1, gpus=1, minutes=2)
    for name in ("a.om", ".hidden.om", "b.om.tmp", "c.om.partial", ".staging/d.om", "manifest.json"):
        (folder / name).write_text(day)
    found = [p.relative_to(folder).as_posix() for p in service.importer.expand([folder])]
    assert found == ["a.om", "manifest.json"]  # the product knows no simulator file name
    chosen = service.importer.expand([folder], ignore=("manifest.json", "*.om*"))
    assert chosen == []


def test_the_import_command_takes_ignore_patterns_from_the_config_and_the_command_line(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.om").write_text(dcgm_dump(hosts=1, gpus=1, minutes=2))
    (folder / "notes.txt").write_text("written by a person\n")
    (folder / "index.json").write_text("{}")
    config = tmp_path / "c.toml"
    config.write_text('[service]\nimport_ignore = ["*.txt"]\n')
    db = tmp_path / "w.duckdb"
    result = CliRunner().invoke(
        cli, ["import", "--config", str(config), "--db", str(db), "--ignore", "index.json", str(folder)]
    )
    assert result.exit_code == 0, result.output
    assert "imported 1 files" in result.output


def test_a_running_service_reads_a_quarantined_file_again_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`POST /api/v1/quarantine/retry` (audited as import.retry): the folder import reads the file again unchanged."""
    folder = tmp_path / "in"
    folder.mkdir()
    path = folder / "day.om"
    path.write_text(dcgm_dump(hosts=1, gpus=2, minutes=3, seed=1))

    def broken(p: Path, **_kwargs: object) -> object:
        raise RuntimeError("a reader bug")

    monkeypatch.setattr("service.importer.read_file", broken)
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        shared = Shared()
        job = FolderImport("import:in", timedelta(0), [folder], wh, shared, ServiceMetrics())
        job.run(NOW)
        assert list(quarantined(wh)) == ["day.om"]
        monkeypatch.setattr("service.importer.read_file", read_file)  # upgraded
        assert job.run(NOW).detail.startswith("0 files")  # unchanged: not read again by itself
        with pytest.raises(ControlError) as unknown:
            control.record(wh, "alice", "import.retry", str(folder / "other.om"), at=NOW)
        assert unknown.value.status == 404
        control.record(wh, "alice", "import.retry", str(path), at=NOW, reason="fixed in 0.9.1")
        shared.retry_files.add(str(path))
        assert job.run(NOW).detail.startswith("1 files")
        assert wh.count("gpu_minutes") > 0
        assert wh.quarantined().is_empty()
        assert not shared.retry_files
