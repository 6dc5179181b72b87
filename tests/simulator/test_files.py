"""The simulator's output: layout, determinism, manifest, and the Slurm files' shape."""

from __future__ import annotations

import gzip
import hashlib
import json
import re
from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest

import simulator.run
from simulator import Manifest, simulate
from simulator.fleet import build_fleet
from simulator.manifest import MANIFEST_FILE
from simulator.workload import scale_out_sizes
from tests.simulator.helpers import epoch, expand_hostlist, gpus_of, sacct_jobs, shards_of

DATA = Path(__file__).resolve().parents[1] / "data" / "scheduler"
FIXTURE = DATA / "sacct_slurm_23_11_5.json"
STEP_FIXTURE = DATA / "slurm" / "23.11-v0.0.40" / "slurmdb-job-timeout.json"
# MIG nodes are <cluster>-mig-NN, the time-sliced notebook node <cluster>-nb-ts-NN
_HOSTS = r"[a-z]+-(gpu|mig|nb-ts)-(\d+|\[\d+(-\d+)?(,\d+(-\d+)?)*\])"
HOSTLIST = re.compile(rf"^{_HOSTS}(,{_HOSTS})*$")


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


def test_a_run_that_keeps_some_telemetry_writes_those_files_as_a_whole_run_does(tmp_path: Path) -> None:
    whole = simulate(tmp_path / "whole", date(2026, 10, 1), 2, 9, nodes=2)
    wanted = {"dcgm/west/2026-10-02.om.gz", "vllm/east/2026-10-01.om.gz"}
    some = simulate(tmp_path / "some", date(2026, 10, 1), 2, 9, nodes=2, telemetry=wanted.__contains__)
    expected = {k: v for k, v in _digests(tmp_path / "whole").items()
                if k != MANIFEST_FILE and (k in wanted or not k.startswith(("dcgm/", "vllm/")))}
    assert wanted <= expected.keys()
    assert {k: v for k, v in _digests(tmp_path / "some").items() if k != MANIFEST_FILE} == expected
    assert set(some.files) == expected.keys()
    assert repr((some.planted, some.incidents)) == repr((whole.planted, whole.incidents))  # NaN where no data


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
    expected |= {f"slurm/{c}/sacct-2026-10.txt.gz" for c in ("east", "west")}  # `sacct -P`
    expected |= {f"slurm/{c}/squeue-{d}.json.gz" for c in ("east", "west") for d in days}  # pending snapshots
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
    east_hosts = ("east-gpu-01", "east-gpu-02", "east-gpu-03", "east-mig-01", "east-nb-ts-01")
    assert manifest.clusters["east"].hosts == east_hosts
    # 8 MIG slots on 3 cards, 8 shards on the notebook node's 2 cards
    assert (manifest.clusters["east"].gpus, manifest.clusters["east"].cards) == (40, 29)
    assert (manifest.clusters["west"].gpus, manifest.clusters["west"].cards) == (24, 24)
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
    sacct = sorted(f for f in manifest.files if "sacct" in f and f.endswith(".json.gz"))
    assert sacct == [
        "slurm/east/sacct-2026-10.json.gz",
        "slurm/east/sacct-2026-11.json.gz",
        "slurm/west/sacct-2026-10.json.gz",
        "slurm/west/sacct-2026-11.json.gz",
    ]
    november = epoch(date(2026, 11, 1))
    for job in json.loads(gzip.decompress((tmp_path / sacct[1]).read_bytes()))["jobs"]:
        assert (job["time"]["end"] or november + 1) > november  # every record overlaps November


def test_sacct_json_has_the_23_11_shape(short_run: tuple[Path, Manifest]) -> None:
    out, _ = short_run
    fixture = json.loads(FIXTURE.read_text())
    step_fixture = json.loads(STEP_FIXTURE.read_text())["jobs"][0]["steps"][0]
    doc = json.loads(gzip.decompress((out / "slurm" / "east" / "sacct-2026-10.json.gz").read_bytes()))
    assert list(doc) == ["meta", "errors", "jobs"]
    assert doc["meta"]["plugin"]["data_parser"] == fixture["meta"]["plugin"]["data_parser"] == "data_parser/v0.0.40"
    assert doc["meta"]["slurm"]["version"]["major"] == "23"
    assert doc["errors"] == []
    keys = list(fixture["jobs"][0])
    for job in doc["jobs"]:
        assert list(job) == keys
        assert set(job["time"]) == set(fixture["jobs"][0]["time"])
        assert set(job["exit_code"]) == set(fixture["jobs"][0]["exit_code"]) == {"status", "return_code", "signal"}
        assert set(job["state"]) == {"current", "reason"}
        assert isinstance(job["state"]["current"], list)
        assert set(job["time"]["limit"]) == {"set", "infinite", "number"}
        for tres in job["tres"]["requested"] + job["tres"]["allocated"]:
            assert set(tres) == {"type", "name", "id", "count"}
        if job["time"]["start"]:
            assert HOSTLIST.match(job["nodes"]), job["nodes"]
            gres = {t["name"] for t in job["tres"]["allocated"] if t["type"] == "gres"}
            if job["nodes"] == "east-nb-ts-01":  # a notebook that asked for a shard: gres/shard alone
                assert gres == {"shard"}
                assert shards_of(job) == 1
                assert {t["name"] for t in job["tres"]["requested"] if t["type"] == "gres"} == {"shard"}
            else:
                assert "gpu" in gres
                assert "gpu:h100" in gres or any(re.fullmatch(r"gpu:\dg\.\d+gb", g) for g in gres), gres  # MIG
                assert gpus_of(job) >= 1
            assert list(job["steps"][0]) == list(step_fixture)
        if job["state"]["current"] == ["RUNNING"]:
            assert job["time"]["end"] == 0
            assert job["steps"][0]["time"]["end"]["set"] is False
    states = {j["state"]["current"][0] for j in doc["jobs"]}
    assert {"COMPLETED", "FAILED", "RUNNING", "PREEMPTED"} <= states
    assert doc["jobs"] == sorted(doc["jobs"], key=lambda j: (j["job_id"], j["time"]["submission"]))


def _code(exit_code: dict[str, Any]) -> str:
    """`return code:signal`, as `sacct -P` prints ExitCode."""
    return f"{exit_code['return_code']['number']}:{exit_code['signal']['id']['number']}"


def test_exit_codes_say_how_each_record_ended(month_runs: list[dict[str, Any]]) -> None:
    codes: dict[str, Counter[str]] = {}
    for job in month_runs:
        codes.setdefault(job["state"]["current"][0], Counter())[_code(job["exit_code"])] += 1
    assert set(codes["COMPLETED"]) == {"0:0"}
    assert set(codes["TIMEOUT"]) == {"0:0"}
    assert set(codes["PREEMPTED"]) == {"0:15"}
    failed = codes["FAILED"]
    # user errors, argument errors, the OOM killer (the step, or the launcher's child) and NCCL aborts
    assert set(failed) == {"1:0", "2:0", "0:9", "137:0", "0:6"}
    assert failed.most_common(1)[0][0] == "1:0"
    assert "0:0" not in failed
    assert set(codes["CANCELLED"]) == {"0:15", "0:0"}  # cancelled running (SIGTERM) or while pending
    for job in month_runs:
        if job["state"]["current"] == ["TIMEOUT"]:
            assert job["steps"][0]["exit_code"]["signal"]["name"] == "TERM"
        if job["exit_code"]["signal"]["id"]["set"]:
            assert job["exit_code"]["status"] == ["SIGNALED"]
            assert job["exit_code"]["return_code"]["set"] is False


def test_jobs_cancelled_while_pending_never_started(month_runs: list[dict[str, Any]]) -> None:
    pending_cancelled = [j for j in month_runs if j["state"]["current"] == ["CANCELLED"] and not j["time"]["start"]]
    assert len(pending_cancelled) >= 50
    for job in pending_cancelled:
        assert job["nodes"] == "None assigned"
        assert job["steps"] == []
        assert job["time"]["end"] > job["time"]["submission"]
        assert job["state"]["reason"] in {"Priority", "Resources", "AssocGrpGRES", "QOSGrpGRES"}


def test_multi_node_jobs_span_whole_nodes(month_runs: list[dict[str, Any]]) -> None:
    multi = [j for j in month_runs if j["allocation_nodes"] > 1]
    assert multi
    for job in multi:
        hosts = expand_hostlist(job["nodes"])
        assert len(hosts) == job["allocation_nodes"] == job["steps"][0]["nodes"]["count"]
        assert gpus_of(job) == 8 * len(hosts)
        assert job["steps"][0]["nodes"]["list"] == hosts


def test_distributed_runs_go_up_to_the_largest_job_the_accounts_limit_lets_start(
    month_runs: list[dict[str, Any]],
) -> None:
    """West has 4 nodes (32 GPUs); nlp's GrpTRES is 24 of them, vision's 28: a 4-node job would pend on
    AssocGrpGRES for ever, so the largest job asks for 3 nodes; 2-node runs start beside the 2-node chain."""
    west = [j for j in month_runs if j["cluster"] == "west" and "chain" not in (j["comment"]["job"] or "")]

    def asked(job: dict[str, Any]) -> int:
        return sum(t["count"] for t in job["tres"]["requested"] if t["type"] == "gres" and t["name"] == "gpu")

    assert max(asked(j) for j in west) == 24
    assert {j["account"] for j in west if asked(j) == 24} <= {"nlp"}
    ran = [j for j in west if j["time"]["start"] and j["allocation_nodes"] > 1]
    assert ran
    assert all(j["qos"] == "high" and gpus_of(j) == 8 * j["allocation_nodes"] for j in ran)


@pytest.mark.parametrize(("nodes", "account", "largest"), [(8, "nlp", 24), (8, "speech", 16), (8, "vision", 24),
                                                            (1250, "nlp", 128), (4, "nlp", None)])
def test_distributed_sizes_are_whole_nodes_up_to_the_cluster_and_the_limit(
    nodes: int, account: str, largest: int | None
) -> None:
    west = build_fleet(nodes).cluster("west")
    sizes = scale_out_sizes(west, account, 2)
    assert (max(s for s, _ in sizes) if sizes else None) == largest
    assert all(s % 8 == 0 for s, _ in sizes)
    weights = [w for _, w in sizes]
    assert weights == sorted(weights, reverse=True)  # n nodes with weight 1/n


def test_eval_sweeps_are_job_arrays(month_runs: list[dict[str, Any]]) -> None:
    tasks: dict[int, list[dict[str, Any]]] = {}
    for job in month_runs:
        if job["array"]["job_id"]:
            tasks.setdefault(job["array"]["job_id"], []).append(job)
    assert len(tasks) >= 20
    for array_id, members in tasks.items():
        if min(j["time"]["submission"] for j in members) < epoch(date(2026, 10, 1)):
            continue  # submitted before the month: its first task may have ended before it too
        first = [j for j in members if j["array"]["task_id"]["number"] == 0 and j["job_id"] == array_id]
        assert first, array_id  # the array's id is its first task's
        assert len({j["time"]["submission"] for j in members if j["array"]["task_id"]["number"] == 0}) >= 1
        assert {j["partition"] for j in members} == {"eval"}


def test_runs_go_past_a_day_up_to_the_train_partitions_limit(month_runs: list[dict[str, Any]]) -> None:
    ended = [j for j in month_runs if j["time"]["end"] and j["time"]["start"] and j["partition"] == "train"]
    longest = max(j["time"]["end"] - j["time"]["start"] for j in ended)
    assert 7 * 86400 < longest <= 14 * 86400


def test_sacct_escapes_slashes_like_json_c(short_run: tuple[Path, Manifest]) -> None:
    out, _ = short_run
    raw = gzip.decompress((out / "slurm" / "west" / "sacct-2026-10.json.gz").read_bytes()).decode()
    assert '"data_parser\\/v0.0.40"' in raw


def test_assoc_snapshots_list_account_limits_and_parents(short_run: tuple[Path, Manifest]) -> None:
    out, _ = short_run
    rows = (out / "slurm" / "east" / "assoc-20261001T000000Z.txt").read_text().splitlines()
    assert rows[0] == "Cluster|Account|User|ParentName|GrpTRES|Priority"
    accounts = {r.split("|")[1]: r.split("|") for r in rows[1:] if r.split("|")[2] == ""}
    assert set(accounts) == {"root", "ai", "nlp", "vision", "speech", "research", "platform"}
    assert accounts["vision"][4].startswith("gres/gpu=")
    assert {a: accounts[a][3] for a in ("ai", "nlp", "vision", "speech", "research", "platform")} == {
        "ai": "root",
        "nlp": "ai",
        "vision": "ai",
        "speech": "ai",
        "research": "ai",
        "platform": "root",
    }
    assert accounts["ai"][4] == ""  # the parent carries no limit of its own
    assert all(len(r.split("|")) == 6 for r in rows)


def test_inference_replicas_are_long_running_infer_jobs(short_run: tuple[Path, Manifest]) -> None:
    out, _ = short_run
    infer = [j for j in sacct_jobs(out, "east") if j["partition"] == "infer"]
    assert {j["qos"] for j in infer} == {"inference"}
    names = {j["name"] for j in infer}
    assert {"vllm-chat-70b-0", "vllm-code-7b-0", "vllm-embed-small-1"} <= names
    running = [j for j in infer if j["state"]["current"] == ["RUNNING"]]
    assert sum(gpus_of(j) for j in running) == 12
    assert {j["nodes"] for j in infer} == {"east-gpu-01", "east-gpu-02"}
