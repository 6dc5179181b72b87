"""Reading files of every kind: detection from content, gzip streams, errors that name the file."""

from __future__ import annotations

import gzip
import os
import random
import shutil
from datetime import datetime
from pathlib import Path

import polars as pl
import pytest

from collectors.files import detect_kind, read_file, sort_for_import
from collectors.inference import WindowState
from gpusteward.errors import InputError
from tests.collectors.synthetic import Replica, dcgm_dump, vllm_dump

DATA = Path(__file__).parents[1] / "data"
T0 = 1_793_491_200  # 2026-11-01T00:00:00Z
ASSOC = "Cluster|Account|User|GrpTRES|Priority\nc1|team||gres/gpu=8|5\n"


def _write(path: Path, text: str, *, gz: bool = False) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if gz:
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return path


def _vllm_days(root: Path) -> list[Path]:
    r = Replica()
    scrapes = []
    for i in range(2 * 288):  # two days of 5-minute scrapes
        r.serve([0.5] * (i % 3))
        scrapes.append((T0 + 300.0 * i, r.scrape(T0 + 300 * i)))
    return [
        _write(root / "vllm/c1/2026-11-01.om.gz", vllm_dump(scrapes[:288]), gz=True),
        _write(root / "vllm/c1/2026-11-02.om.gz", vllm_dump(scrapes[288:]), gz=True),
    ]


def test_a_simulated_import(tmp_path: Path) -> None:
    dcgm = _write(tmp_path / "dcgm/c1/2026-11-01.om.gz", dcgm_dump(hosts=2, gpus=2, minutes=30), gz=True)
    sacct_text = (DATA / "scheduler/sacct-22.05.8-local.json").read_text()
    sacct = _write(tmp_path / "slurm/c1/sacct-2026-11.json.gz", sacct_text, gz=True)
    assoc = _write(tmp_path / "slurm/c1/assoc-20261101T000000Z.txt", ASSOC)
    days = _vllm_days(tmp_path)
    paths = [days[1], dcgm, days[0], assoc, sacct, tmp_path / "missing.txt"]
    ordered = sort_for_import(paths)
    assert ordered == [assoc, sacct, dcgm, days[0], days[1], tmp_path / "missing.txt"]

    assert read_file(dcgm).rows == {"gpu_minutes": 2 * 2 * 30}
    assert read_file(sacct).rows == {"jobs": 9, "job_events": 28}
    snap = read_file(assoc).frames["quota_snapshots"]
    assert snap.rows() == [("c1", datetime(2026, 11, 1), "account", "team", 8, 5)]
    state = WindowState()
    windows = pl.concat([read_file(p, inference_state=state).frames["inference_windows"] for p in days])
    assert windows.height == 2 * 288 - 1  # midnight's window comes from the state
    assert (windows["window_s"] == 300).all()
    assert windows["requests"].sum() == sum(i % 3 for i in range(1, 2 * 288))


def test_kind_comes_from_the_content(tmp_path: Path) -> None:
    named_wrong = _write(tmp_path / "notes.txt", dcgm_dump(hosts=1, gpus=1, minutes=2), gz=True)
    assert detect_kind(named_wrong) == "dcgm"
    assert read_file(named_wrong).rows == {"gpu_minutes": 2}
    scrape = tmp_path / "scrape.prom"
    shutil.copyfile(DATA / "metrics/datadog-dcgm-metrics.txt", scrape)
    os.utime(scrape, (T0 + 90, T0 + 90))
    batch = read_file(scrape, default_cluster="lab")  # 0.0.4 without timestamps: the file's mtime
    assert batch.frames["gpu_minutes"].select("cluster", "host", "ts").row(0) == (
        "lab",
        "424773df46e0",
        datetime(2026, 11, 1, 0, 1),
    )
    assert len(batch.problems) == 1  # the fixture's unlabelled dummy series
    assert detect_kind(DATA / "metrics/datadog-vllm-metrics.txt") == "inference"
    assert detect_kind(DATA / "scheduler/sacct_slurm_23_11_5.json") == "sacct"


def test_assoc_without_a_time_in_its_name_uses_mtime(tmp_path: Path) -> None:
    path = _write(tmp_path / "assoc.txt", ASSOC)
    os.utime(path, (T0, T0))
    batch = read_file(path)
    assert batch.frames["quota_snapshots"]["ts"].to_list() == [datetime(2026, 11, 1)]
    assert "mtime" in batch.problems[0].message


def test_truncated_gzip_names_the_file_and_line(tmp_path: Path) -> None:
    whole = gzip.compress(dcgm_dump(hosts=2, gpus=8, minutes=60, seed=1).encode())
    path = tmp_path / "dcgm/c1/2026-11-01.om.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(whole[: len(whole) // 2])
    with pytest.raises(InputError, match=rf"^{path}:\d+: truncated or corrupt compressed data"):
        read_file(path)


def test_a_corrupt_deflate_stream_names_the_file_and_line(tmp_path: Path) -> None:
    """Bytes overwritten inside the compressed data (not cut short): ISA-L's inflate error is an InputError too."""
    whole = bytearray(gzip.compress(dcgm_dump(hosts=2, gpus=8, minutes=60, seed=1).encode()))
    middle = len(whole) // 2
    whole[middle : middle + 64] = b"\xff" * 64
    path = tmp_path / "dcgm/c1/2026-11-01.om.gz"
    path.parent.mkdir(parents=True)
    path.write_bytes(bytes(whole))
    with pytest.raises(InputError, match=rf"^{path}:\d+: truncated or corrupt compressed data"):
        read_file(path)


def test_openmetrics_without_eof_is_truncated(tmp_path: Path) -> None:
    text = dcgm_dump(hosts=1, gpus=1, minutes=3).replace("# EOF\n", "")
    path = _write(tmp_path / "2026-11-01.om.gz", text, gz=True)
    lines = text.count("\n")
    with pytest.raises(InputError, match=rf"^{path}:{lines + 1}: no '# EOF'"):
        read_file(path)


def test_bad_lines_and_bytes_name_the_line(tmp_path: Path) -> None:
    text = dcgm_dump(hosts=1, gpus=1, minutes=3).replace(" 1793491260.000", " 1793491260.000 extra", 1)
    bad_line = next(i for i, line in enumerate(text.split("\n"), 1) if "extra" in line)
    with pytest.raises(InputError, match=rf"^{tmp_path / 'x.om'}:{bad_line}: "):
        read_file(_write(tmp_path / "x.om", text))
    raw = dcgm_dump(hosts=1, gpus=1, minutes=3).encode().replace(b'"nvidia0"', b'"nvidia\xff"', 2)
    path = tmp_path / "y.om"
    path.write_bytes(raw)
    with pytest.raises(InputError, match=rf"^{path}:\d+: not UTF-8 text"):
        read_file(path)


def test_unknown_content_is_an_error(tmp_path: Path) -> None:
    path = _write(tmp_path / "readme.txt", "hello\n")
    with pytest.raises(InputError, match="not a kind of file"):
        read_file(path)
    assert detect_kind(path) is None


def test_big_dump_is_streamed(tmp_path: Path) -> None:
    rng = random.Random(0)
    text = dcgm_dump(hosts=4, gpus=8, minutes=240, seed=rng.randrange(100))  # about 60k lines
    path = _write(tmp_path / "dcgm/c1/2026-11-01.om.gz", text, gz=True)
    assert read_file(path).rows == {"gpu_minutes": 4 * 8 * 240}
