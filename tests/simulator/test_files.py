"""The simulator's output: layout, determinism, manifest, and the Slurm files' shape."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from datetime import date
from pathlib import Path

import pytest

import simulator.run
from simulator import Manifest, simulate
from tests.simulator.helpers import epoch, gpus_of, sacct_jobs

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "scheduler" / "sacct-22.05.8-local.json"
HOSTLIST = re.compile(r"^[a-z]+-gpu-(\d+|\[\d+(-\d+)?(,\d+(-\d+)?)*\])$")


def _digests(out: Path) -> dict[str, str]:
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


def test_same_seed_gives_the_same_bytes_and_another_seed_does_not(tmp_path: Path) -> None:
    runs = {}
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        simulate(tmp_path / name, date(2026, 10, 1), 2, seed, nodes=2)
        runs[name] = _digests(tmp_path / name)
    assert runs["a"] == runs["b"]
    assert runs["a"].keys() == runs["c"].keys()
    differing = [k for k in runs["a"] if runs["a"][k] != runs["c"][k]]
    assert any(k.startswith("dcgm/") for k in differing)
    assert any(k.startswith("slurm/") and "sacct" in k for k in differing)


def test_worker_processes_write_the_same_bytes_as_one_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    simulate(tmp_path / "one", date(2026, 10, 1), 2, 9, nodes=2)
    monkeypatch.setattr(simulator.run, "PARALLEL_MIN_GPU_DAYS", 0)
    simulate(tmp_path / "two", date(2026, 10, 1), 2, 9, nodes=2)
    assert _digests(tmp_path / "one") == _digests(tmp_path / "two")


def test_gzip_members_carry_no_name_or_time(short_run: tuple[Path, Manifest]) -> None:
    out, manifest = short_run
    for rel in manifest.files:
        if rel.endswith(".gz"):
            head = (out / rel).read_bytes()[:10]
            assert head[:3] == b"\x1f\x8b\x08"
            assert head[3] == 0  # no FNAME/FEXTRA flags
            assert head[4:8] == b"\0\0\0\0"  # mtime 0


def test_files_follow_the_documented_layout(short_run: tuple[Path, Manifest]) -> None:
    out, manifest = short_run
    days = ["2026-10-01", "2026-10-02", "2026-10-03"]
    expected = {f"dcgm/{c}/{d}.om.gz" for c in ("east", "west") for d in days}
    expected |= {f"vllm/east/{d}.om.gz" for d in days}
    expected |= {f"slurm/{c}/sacct-2026-10.json.gz" for c in ("east", "west")}
    expected |= {f"slurm/{c}/assoc-{t}.txt" for c in ("east", "west") for t in ("20261001T000000Z", "20261004T000000Z")}
    on_disk = {p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()} - {"manifest.json"}
    assert on_disk == expected
    assert set(manifest.files) == expected
    assert not (out / "vllm" / "west").exists()  # no inference served on west


def test_manifest_round_trips_and_describes_the_fleet(short_run: tuple[Path, Manifest]) -> None:
    out, manifest = short_run
    loaded = Manifest.load(out / "manifest.json")
    assert loaded == manifest
    assert manifest.seed == 11
    assert manifest.start == "2026-10-01"
    assert manifest.days == 3
    assert manifest.clusters["east"].hosts == ("east-gpu-01", "east-gpu-02", "east-gpu-03")
    assert manifest.clusters["west"].gpus == 24
    kinds = {p.kind: p for p in manifest.planted}
    assert kinds["reserve_breach"].subject == "east"
    assert kinds["reserve_breach"].start == "2026-10-02T09:00:00Z"
    assert kinds["exporter_outage"].subject == "west-gpu-03"
    assert (kinds["exporter_outage"].start, kinds["exporter_outage"].end) == (
        "2026-10-03T06:00:00Z",
        "2026-10-03T12:00:00Z",
    )


def test_a_range_over_a_month_end_writes_one_sacct_file_per_month(tmp_path: Path) -> None:
    manifest = simulate(tmp_path, date(2026, 10, 31), 2, 3, nodes=2)
    sacct = sorted(f for f in manifest.files if "sacct" in f)
    assert sacct == [
        "slurm/east/sacct-2026-10.json.gz",
        "slurm/east/sacct-2026-11.json.gz",
        "slurm/west/sacct-2026-10.json.gz",
        "slurm/west/sacct-2026-11.json.gz",
    ]
    november = epoch(date(2026, 11, 1))
    for job in json.loads(gzip.decompress((tmp_path / sacct[1]).read_bytes()))["jobs"]:
        assert (job["time"]["end"] or november + 1) > november  # every record overlaps November


def test_sacct_json_has_the_22_05_shape(short_run: tuple[Path, Manifest]) -> None:
    out, _ = short_run
    fixture = json.loads(FIXTURE.read_text())
    doc = json.loads(gzip.decompress((out / "slurm" / "east" / "sacct-2026-10.json.gz").read_bytes()))
    assert list(doc) == ["meta", "errors", "jobs"]
    assert doc["meta"] == fixture["meta"]
    assert doc["errors"] == []
    keys = list(fixture["jobs"][0])
    for job in doc["jobs"]:
        assert list(job) == keys
        assert set(job["time"]) == set(fixture["jobs"][0]["time"])
        assert job["exit_code"] == {"status": "SUCCESS", "return_code": 0}
        assert job["derived_exit_code"] == {"status": "SUCCESS", "return_code": 0}
        assert set(job["state"]) == {"current", "reason"}
        for tres in job["tres"]["requested"] + job["tres"]["allocated"]:
            assert set(tres) == {"type", "name", "id", "count"}
        if job["time"]["start"]:
            assert HOSTLIST.match(job["nodes"]), job["nodes"]
            assert {"gpu", "gpu:h100"} <= {t["name"] for t in job["tres"]["allocated"] if t["type"] == "gres"}
            assert gpus_of(job) >= 1
            assert set(job["steps"][0]) == set(fixture["jobs"][0]["steps"][0])
        if job["state"]["current"] == "RUNNING":
            assert job["time"]["end"] == 0
            assert job["steps"][0]["time"]["end"] == 0
    states = {j["state"]["current"] for j in doc["jobs"]}
    assert {"COMPLETED", "FAILED", "RUNNING", "PREEMPTED"} <= states
    assert doc["jobs"] == sorted(doc["jobs"], key=lambda j: (j["job_id"], j["time"]["submission"]))


def test_sacct_escapes_slashes_like_json_c(short_run: tuple[Path, Manifest]) -> None:
    out, _ = short_run
    raw = gzip.decompress((out / "slurm" / "west" / "sacct-2026-10.json.gz").read_bytes()).decode()
    assert '"openapi\\/dbv0.0.38"' in raw


def test_assoc_snapshots_list_account_limits(short_run: tuple[Path, Manifest]) -> None:
    out, _ = short_run
    rows = (out / "slurm" / "east" / "assoc-20261001T000000Z.txt").read_text().splitlines()
    assert rows[0] == "Cluster|Account|User|GrpTRES|Priority"
    accounts = {r.split("|")[1]: r.split("|") for r in rows[1:] if r.split("|")[2] == ""}
    assert set(accounts) == {"root", "nlp", "vision", "speech", "research", "platform"}
    assert accounts["vision"][3].startswith("gres/gpu=")
    assert all(len(r.split("|")) == 5 for r in rows)


def test_inference_replicas_are_long_running_infer_jobs(short_run: tuple[Path, Manifest]) -> None:
    out, _ = short_run
    infer = [j for j in sacct_jobs(out, "east") if j["partition"] == "infer"]
    assert {j["qos"] for j in infer} == {"inference"}
    names = {j["name"] for j in infer}
    assert {"vllm-chat-70b-0", "vllm-code-7b-0", "vllm-embed-small-1"} <= names
    running = [j for j in infer if j["state"]["current"] == "RUNNING"]
    assert sum(gpus_of(j) for j in running) == 12
    assert {j["nodes"] for j in infer} == {"east-gpu-01", "east-gpu-02"}
