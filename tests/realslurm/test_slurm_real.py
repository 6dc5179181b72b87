"""A real Slurm 22.05 cluster: collect jobs and quotas over the CLI and slurmrestd, write GPU limits."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest

from collectors.slurm import (
    DryRunScheduler,
    QuotaConflictError,
    QuotaTarget,
    RestQuotaWriter,
    SacctmgrQuotaWriter,
    SlurmCli,
    SlurmClient,
    SlurmRest,
)
from gpusteward.errors import InputError, PermanentError, TransientError
from tests.realslurm.cluster import CLUSTER, SlurmCluster
from tests.realslurm.scenario import Scenario
from warehouse import Warehouse, open_warehouse
from warehouse.watermarks import get_watermark


@pytest.fixture
def wh(tmp_path: Path) -> Iterator[Warehouse]:
    with open_warehouse(tmp_path / "w.duckdb") as w:
        yield w


@pytest.fixture
def cli(slurm: SlurmCluster) -> SlurmCli:
    return SlurmCli(env=slurm.env)


@pytest.fixture
def rest(slurm: SlurmCluster) -> Iterator[SlurmRest]:
    client = SlurmRest(socket=slurm.rest_socket)
    yield client
    client.close()


def _by_id(jobs: pl.DataFrame, job_id: int) -> list[dict[str, Any]]:
    return jobs.filter(pl.col("job_id") == job_id).sort("submit_time").rows(named=True)


def test_cluster_is_up_on_loopback(slurm: SlurmCluster) -> None:
    nodes = slurm.run("sinfo", "-h", "-N", "-o", "%N %G").split()
    assert "gpu-01" in nodes
    assert "gpu:h100:8" in " ".join(nodes)
    partitions = set(slurm.run("sinfo", "-h", "-o", "%R").split())
    assert partitions == {"training", "inference", "interactive", "batch"}
    listening = Path("/proc/net/tcp").read_text().splitlines()[1:]
    ours = {f"{port:04X}" for port in slurm.ports.values()}
    for line in listening:
        local, state = line.split()[1], line.split()[3]
        if state == "0A" and local.split(":")[1] in ours:
            assert local.startswith("0100007F:"), f"{local} listens beyond loopback"


def test_scenario_states(scenario: Scenario) -> None:
    assert scenario.low_after_preempt == "PENDING"  # requeued after preemption
    assert (scenario.blocked_state, scenario.blocked_reason) == ("PENDING", "QOSGrpGRES")
    assert scenario.lowered is not None
    assert (scenario.lowered.before, scenario.lowered.after, scenario.lowered.applied) == (None, 4, True)
    assert scenario.raised is not None
    assert (scenario.raised.before, scenario.raised.after) == (4, 8)
    assert scenario.quota_b_after in ("RUNNING", "COMPLETED")  # raising the limit let it start


def test_cli_collection_into_warehouse(slurm: SlurmCluster, scenario: Scenario, cli: SlurmCli, wh: Warehouse) -> None:
    client = SlurmClient(CLUSTER, cli=cli)
    start, end = slurm.window()
    batch = client.jobs(start, end)
    assert batch.problems == []
    result = wh.ingest(batch.source, batch.frames)
    jobs = batch.frames["jobs"]
    ids = scenario.ids
    assert _by_id(jobs, ids["ok"])[0]["state"] == "COMPLETED"
    ok = _by_id(jobs, ids["ok"])[0]
    assert (ok["gpus_allocated"], ok["gpu_type"], ok["nodes"], ok["partition"]) == (2, "h100", "gpu-01", "training")
    fail = _by_id(jobs, ids["fail"])[0]
    assert (fail["state"], fail["exit_code"], fail["account"]) == ("FAILED", 3, "inference")  # not 22.05 JSON's 0
    assert _by_id(jobs, ids["cancel"])[0]["state"] == "CANCELLED"
    low = _by_id(jobs, ids["low"])
    assert next(r["state"] for r in low) == "PREEMPTED"
    assert [r["state"] for r in low] == ["PREEMPTED", "CANCELLED"]
    assert low[0]["qos"] == "low"
    assert low[0]["gpus_allocated"] == 8
    quota_b = _by_id(jobs, ids["quota_b"])[0]
    assert (quota_b["state"], quota_b["qos"]) == ("COMPLETED", "team-quota")
    events = batch.frames["job_events"].filter(pl.col("job_id") == ids["low"])
    assert {"preempt", "requeue", "submit", "start", "end"} <= set(events["event"])
    assert result.stored["jobs"] == jobs.height
    again = client.jobs(start, end)
    second = wh.ingest(again.source, again.frames)
    assert second.stored == {"jobs": 0, "job_events": 0}
    assert wh.count("jobs") == jobs.height


def test_incremental_window_keeps_requeue_history(scenario: Scenario, cli: SlurmCli) -> None:
    """A window that starts after the preemption still returns the job's earlier PREEMPTED record."""
    client = SlurmClient(CLUSTER, cli=cli)
    jobs = client.jobs(datetime(2000, 1, 1), datetime(2100, 1, 1)).frames["jobs"]
    first, last = _by_id(jobs, scenario.ids["low"])[0], _by_id(jobs, scenario.ids["low"])[-1]
    assert first["state"] == "PREEMPTED"
    assert first["end_time"] < last["start_time"]
    late = client.jobs(last["start_time"], last["end_time"] + timedelta(minutes=1))
    states = [r["state"] for r in _by_id(late.frames["jobs"], scenario.ids["low"])]
    assert states == ["PREEMPTED", "CANCELLED"]
    events = late.frames["job_events"].filter(pl.col("job_id") == scenario.ids["low"])
    assert "requeue" in set(events["event"])


def test_rest_collection_matches_cli(slurm: SlurmCluster, scenario: Scenario, cli: SlurmCli, rest: SlurmRest) -> None:
    start, end = slurm.window()
    by_cli = SlurmClient(CLUSTER, cli=cli).jobs(start, end).frames["jobs"]
    by_rest = SlurmClient(CLUSTER, rest=rest, cli=cli).jobs(start, end).frames["jobs"]
    key = ["job_id", "submit_time", "state", "gpus_allocated", "exit_code"]
    assert by_rest.select(key).sort(key).rows() == by_cli.select(key).sort(key).rows()
    assert scenario.ids["low"] in by_rest["job_id"].to_list()


@pytest.mark.parametrize("transport", ["cli", "rest"])
def test_quota_snapshots(scenario: Scenario, cli: SlurmCli, rest: SlurmRest, transport: str) -> None:
    client = SlurmClient(CLUSTER, cli=cli) if transport == "cli" else SlurmClient(CLUSTER, rest=rest)
    ts = datetime(2026, 11, 29, 12)
    snaps = client.quotas(ts).frames["quota_snapshots"]
    row = {(k, n): (g, p) for k, n, g, p in snaps.select("kind", "name", "gpu_limit", "priority").rows()}
    assert row[("qos", "team-quota")] == (8, 10)
    assert row[("qos", "high")] == (None, 1000)
    assert row[("account", "ml-research")][0] is None
    assert row[("partition", "training")][0] == 16
    assert scenario.ids


def test_usage_counts_running_gpus(slurm: SlurmCluster, scenario: Scenario, cli: SlurmCli) -> None:
    job = int(
        slurm.run(
            "sbatch",
            "--parsable",
            "-o",
            "/dev/null",
            "-A",
            "inference",
            "-p",
            "inference",
            "--gres=gpu:2",
            "--wrap",
            "sleep 300",
        ).strip()
    )
    try:
        from tests.realslurm.scenario import wait_for

        wait_for(slurm, job, "RUNNING")
        usage = SlurmClient(CLUSTER, cli=cli).usage(datetime(2026, 11, 29))
        row = usage.filter((pl.col("kind") == "account") & (pl.col("name") == "inference")).row(0, named=True)
        assert (row["gpus_in_use"], row["jobs_running"]) == (2, 1)
    finally:
        slurm.run("scancel", str(job))
    assert scenario.ids


def test_account_limit_round_trip(cli: SlurmCli, rest: SlurmRest) -> None:
    writer = SacctmgrQuotaWriter(cli)
    target = QuotaTarget("account", "inference", cluster=CLUSTER)
    before = writer.read_gpu_limit(target)
    change = writer.set_gpu_limit(target, expected=before, new=6)
    assert change.applied
    assert change.after == 6
    assert RestQuotaWriter(rest).read_gpu_limit(target) == 6  # REST reads what sacctmgr wrote
    # 22.05's POST /associations answers 200 and changes nothing for an account association: refused up front
    with pytest.raises(PermanentError, match="leaves an account association unchanged"):
        RestQuotaWriter(rest).set_gpu_limit(target, expected=6, new=12)
    back = writer.set_gpu_limit(target, expected=6, new=before)
    assert back.after == before


def test_conflict_refuses_and_dry_run_only_reports(cli: SlurmCli, rest: SlurmRest) -> None:
    target = QuotaTarget("qos", "high")
    for writer in (SacctmgrQuotaWriter(cli), RestQuotaWriter(rest)):
        with pytest.raises(QuotaConflictError, match="not the expected 3"):
            writer.set_gpu_limit(target, expected=3, new=5)
        assert writer.read_gpu_limit(target) is None
    dry = DryRunScheduler(SacctmgrQuotaWriter(cli))
    change = dry.set_gpu_limit(target, expected=None, new=2)
    assert (change.applied, change.before, change.requested) == (False, None, 2)
    assert dry.reported == [change]
    assert SacctmgrQuotaWriter(cli).read_gpu_limit(target) is None


def test_jwt_auth_and_refusals(slurm: SlurmCluster, scenario: Scenario, wh: Warehouse) -> None:
    url = f"http://127.0.0.1:{slurm.jwt_port}"
    good = SlurmRest(base_url=url, user="root", token=slurm.token())
    client = SlurmClient(CLUSTER, rest=good)
    start, end = slurm.window()
    batch = client.jobs(start, end)
    wh.ingest(batch.source, batch.frames)
    stored = wh.counts()
    assert stored["jobs"] >= len(scenario.ids)
    no_token = SlurmRest(base_url=url)
    with pytest.raises(
        PermanentError, match=r"slurmrestd http://127\.0\.0\.1:\d+ GET /slurmdb/v0\.0\.38/jobs: HTTP 401"
    ):
        SlurmClient(CLUSTER, rest=no_token).jobs(start, end)
    bad_token = SlurmRest(base_url=url, user="root", token=slurm.token()[:-6] + "AAAAAA")
    # a corrupted token: 22.05.8 answers with an authentication error in the body (the notes saw a 500)
    refused = r"slurmrestd http://127\.0\.0\.1:\d+ GET /slurmdb/v0\.0\.38/jobs: .*(HTTP 5\d\d|authentication)"
    with pytest.raises((TransientError, PermanentError), match=refused):
        SlurmClient(CLUSTER, rest=bad_token).jobs(start, end)
    for c in (good, no_token, bad_token):
        c.close()
    assert wh.counts() == stored


def test_sacct_missing_or_garbled(tmp_path: Path, slurm: SlurmCluster, wh: Warehouse) -> None:
    start, end = slurm.window()
    with pytest.raises(PermanentError, match=r"^sacct: not found on PATH .*slurm-client"):
        SlurmClient(CLUSTER, cli=SlurmCli(path=str(tmp_path), env=slurm.env)).jobs(start, end)
    fake = tmp_path / "sacct"
    fake.write_text("#!/bin/sh\necho '{\"jobs\": ['\n")
    fake.chmod(0o755)
    with pytest.raises(InputError, match=r"^sacct --json .*: not valid JSON"):
        SlurmClient(CLUSTER, cli=SlurmCli(path=str(tmp_path), env=slurm.env)).jobs(start, end)
    assert wh.counts()["jobs"] == 0


def test_scheduler_commands(slurm: SlurmCluster, scenario: Scenario, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from service.cli_scheduler import scheduler

    runner = CliRunner(env=slurm.env)
    base = ["--cluster", CLUSTER]
    got = runner.invoke(scheduler, [*base, "quota", "get", "qos", "team-quota"])
    assert (got.exit_code, got.output.strip()) == (0, "8")
    dry = runner.invoke(scheduler, [*base, "quota", "set", "qos", "team-quota", "2", "--expected", "8", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert '"applied": false' in dry.output
    refused = runner.invoke(scheduler, [*base, "quota", "set", "qos", "team-quota", "2", "--expected", "5"])
    assert refused.exit_code == 1
    assert "not the expected 5" in refused.output
    db = tmp_path / "w.duckdb"
    first = runner.invoke(scheduler, [*base, "--rest-socket", slurm.rest_socket, "collect", "--db", str(db)])
    assert first.exit_code == 0, first.output
    with open_warehouse(db) as w:
        assert w.count("jobs") >= len(scenario.ids)
        assert w.count("quota_snapshots") > 0
        assert w.count("quota_usage") > 0  # GPUs in use against each QOS, account and partition
        assert get_watermark(w, f"slurm:{CLUSTER}") is not None
