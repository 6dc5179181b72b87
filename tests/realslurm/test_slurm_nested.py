"""The second real Slurm 22.05 layout (issue 19): arrays, nested accounts, PreemptMode=CANCEL, a job
rejected at submit, one cancelled while pending, multi-node jobs, exit codes and pending reasons;
and the checks that run on both layouts (file dumps against live collection, the account tree over
the CLI and slurmrestd, pending snapshots)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from collectors.files import read_file
from collectors.slurm import SlurmCli, SlurmClient, SlurmRest, expand
from gpusteward.domain import Month
from sla.account_limits import binding_limits
from sla.protection_queues import QueueWaitLine
from tests.realslurm.cluster import NESTED, SlurmCluster
from tests.realslurm.scenario import Scenario, submit, wait_for
from tests.realslurm.scenario_nested import SACCT_P_FORMAT, NestedScenario
from tests.sla.builders import config, inputs
from warehouse import open_warehouse

CLUSTER = NESTED.cluster


@pytest.fixture
def rest(nested_slurm: SlurmCluster) -> Iterator[SlurmRest]:
    client = SlurmRest(socket=nested_slurm.rest_socket)
    yield client
    client.close()


def _live_jobs(slurm: SlurmCluster, nested: NestedScenario) -> pl.DataFrame:
    client = SlurmClient(CLUSTER, cli=SlurmCli(env=slurm.env))
    batch = client.jobs(*slurm.window())
    assert batch.problems == []
    assert nested.ids
    return batch.frames["jobs"]


def test_layout_is_up(nested_slurm: SlurmCluster) -> None:
    nodes = nested_slurm.run("sinfo", "-h", "-N", "-o", "%N %G").split()
    assert [n for n in nodes if n.startswith("gpu-")] == ["gpu-01", "gpu-01", "gpu-02", "gpu-02", "gpu-03", "gpu-03"]
    assert "gpu:h100:4" in nodes
    limits = dict(line.split() for line in nested_slurm.run("sinfo", "-h", "-o", "%R %l").splitlines())
    assert limits == {"train": "2-00:00:00", "dev": "1:00:00"}
    assert "PreemptMode             = CANCEL" in nested_slurm.run("scontrol", "show", "config")


def test_scenario_states(nested: NestedScenario) -> None:
    assert "Requested node configuration is not available" in nested.rejected
    assert nested.pending_reasons == {"vision_b": "AssocGrpGRES", "nlp_b": "AssocGrpGRES"}
    assert nested.scav_after == "PREEMPTED"


def test_cli_collection_reads_every_feature(nested_slurm: SlurmCluster, nested: NestedScenario) -> None:
    jobs = _live_jobs(nested_slurm, nested)
    row = {r["job_id"]: r for r in jobs.rows(named=True)}
    ids = nested.ids
    tasks = jobs.filter(pl.col("array_job_id") == nested.array_job).sort("array_task_id")
    assert tasks["array_task_id"].to_list() == [1, 2, 3, 4, 5, 6]  # D4
    two = row[ids["two_node"]]
    assert (two["gpus_allocated"], len(expand(two["nodes"], source="nodes"))) == (8, 2)  # 4 on each of 2 nodes
    assert (row[ids["fail"]]["state"], row[ids["fail"]]["exit_code"], row[ids["fail"]]["exit_signal"]) == (
        "FAILED", 3, None)
    killed = row[ids["killed"]]  # sacct -P: 0:9; a signal that ended a job leaves no return code
    assert (killed["state"], killed["exit_code"], killed["exit_signal"]) == ("FAILED", None, 9)
    rejected = jobs.filter(pl.col("name") == "too-big").row(0, named=True)
    assert (rejected["state"], rejected["start_time"]) == ("FAILED", None)  # D5
    assert (row[ids["nlp_b"]]["state"], row[ids["nlp_b"]]["start_time"]) == ("CANCELLED", None)
    assert row[ids["vision_b"]]["reason"] == "AssocGrpGRES"
    assert row[ids["scav"]]["state"] == "PREEMPTED"
    assert jobs.filter(pl.col("job_id") == ids["scav"]).height == 1  # CANCEL: no requeued record


def test_cancelled_while_pending_is_no_month_long_breach(nested_slurm: SlurmCluster, nested: NestedScenario) -> None:
    """D1: with max_wait 10 s the issue's run opened a breach of 43,963 minutes for the cancelled job."""
    jobs = _live_jobs(nested_slurm, nested)
    now = datetime.now(UTC).replace(tzinfo=None)
    line = f'[[protection.queue_wait]]\nqueue = "{CLUSTER}/*"\nmax_wait = "10s"\nresolve_after = "0s"\n'
    ins = inputs(jobs=jobs.rows(named=True), month=Month(now.year, now.month), data_end=now)
    assert QueueWaitLine().episodes(ins, config(line)).height == 0


def test_rest_collection_matches_cli(nested_slurm: SlurmCluster, nested: NestedScenario, rest: SlurmRest) -> None:
    start, end = nested_slurm.window()
    cli = SlurmCli(env=nested_slurm.env)
    by_cli = SlurmClient(CLUSTER, cli=cli).jobs(start, end).frames["jobs"]
    by_rest = SlurmClient(CLUSTER, rest=rest, cli=cli).jobs(start, end).frames["jobs"]
    key = ["job_id", "submit_time", "start_time", "state", "gpus_allocated", "exit_code", "exit_signal",
           "array_task_id"]
    assert by_rest.select(key).sort(key, nulls_last=True).rows() == by_cli.select(key).sort(key, nulls_last=True).rows()
    assert by_cli.height >= len(nested.ids) + 6


def test_pending_snapshot_explains_the_parents_limit(nested_slurm: SlurmCluster, nested: NestedScenario) -> None:
    """D3: the waits captured live during the run, read with the live tree and usage."""
    client = SlurmClient(CLUSTER, cli=SlurmCli(env=nested_slurm.env))
    ts = datetime(2026, 12, 1)
    tree = client.quotas(ts).frames["account_tree"]
    usage = client.usage(ts, tree=tree, live=nested.squeue_pending)
    research = usage.filter((pl.col("kind") == "account") & (pl.col("name") == "research")).row(0, named=True)
    assert (research["gpus_in_use"], research["jobs_pending"]) == (8, 2)  # not "0 of 10"
    pending = client.pending(ts, live=nested.squeue_pending)
    bound = dict(binding_limits(pending, tree, usage).select("job_id", "bound_by").rows())
    assert bound == {nested.ids["vision_b"]: "research", nested.ids["nlp_b"]: "nlp"}


# -- the checks that run on both layouts ------------------------------------------------------------


@pytest.fixture(params=["flat", "nested"])
def layout(
    request: pytest.FixtureRequest, slurm: SlurmCluster, scenario: Scenario, nested_slurm: SlurmCluster,
    nested: NestedScenario,
) -> tuple[SlurmCluster, str]:
    """Both layouts, each after its scenario ran. Named statically, so that tests/parallel.py keeps this
    module with the others that share the session's clusters on one worker."""
    assert scenario.ids
    assert nested.ids
    return (slurm, "stewtest") if request.param == "flat" else (nested_slurm, CLUSTER)


def test_file_dumps_import_as_live_collection(layout: tuple[SlurmCluster, str], tmp_path: Path) -> None:
    """`sacct --json` and `sacct -P` dumps give what the live collector gives, exit codes included."""
    slurm, cluster = layout
    start, end = slurm.window()
    span = ["-S", start.strftime("%Y-%m-%dT%H:%M:%S"), "-E", end.strftime("%Y-%m-%dT%H:%M:%S")]
    (tmp_path / "sacct.json").write_text(slurm.run("sacct", "-a", "-D", "-X", "--json", *span))
    (tmp_path / "sacct.txt").write_text(slurm.run("sacct", "-a", "-D", "-X", "-P", "-o", SACCT_P_FORMAT, *span))
    live = SlurmClient(cluster, cli=SlurmCli(env=slurm.env)).jobs(start, end).frames["jobs"]
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        for name in ("sacct.json", "sacct.txt"):
            batch = read_file(tmp_path / name)
            assert batch.problems == []
            wh.ingest(name, batch.frames)
        stored = wh.query(
            "SELECT job_id, submit_time, state, exit_code, exit_signal, gpus_allocated, array_task_id FROM jobs")
    key = ["job_id", "submit_time", "state", "exit_code", "exit_signal", "gpus_allocated", "array_task_id"]
    assert stored.select(key).sort(key, nulls_last=True).rows() == live.select(key).sort(key, nulls_last=True).rows()
    assert 3 in stored["exit_code"].to_list()  # each layout has a job that exits 3
    if cluster == CLUSTER:  # and the nested one a job SIGKILL ended: the same from every path
        assert stored.filter(pl.col("exit_signal") == 9).height == 1


def test_account_tree_over_cli_and_rest(layout: tuple[SlurmCluster, str]) -> None:
    slurm, cluster = layout
    ts = datetime(2026, 12, 1)
    by_cli = SlurmClient(cluster, cli=SlurmCli(env=slurm.env)).quotas(ts).frames["account_tree"]
    rest = SlurmRest(socket=slurm.rest_socket)
    try:
        by_rest = SlurmClient(cluster, rest=rest).quotas(ts).frames["account_tree"]
    finally:
        rest.close()
    cols = ["account", "parent", "gpu_limit"]
    assert by_cli.select(cols).sort("account").rows() == by_rest.select(cols).sort("account").rows()
    parents = dict(by_cli.select("account", "parent").rows())
    assert parents["root"] is None
    if cluster == CLUSTER:
        assert (parents["vision"], parents["nlp"], parents["platform"]) == ("research", "research", "root")


def test_scheduler_collect_stores_pending_jobs_and_the_tree(layout: tuple[SlurmCluster, str], tmp_path: Path) -> None:
    slurm, cluster = layout
    account = "vision" if cluster == CLUSTER else "inference"
    held = submit(slurm, "-H", "-A", account, "--gres=gpu:1", "-J", "held", "--wrap", "sleep 1")
    try:
        wait_for(slurm, held, "PENDING")
        from service.cli_scheduler import scheduler

        db = tmp_path / "w.duckdb"
        got = CliRunner(env=slurm.env).invoke(scheduler, ["--cluster", cluster, "collect", "--db", str(db)])
        assert got.exit_code == 0, got.output
        with open_warehouse(db) as wh:
            pending = wh.query("SELECT job_id, account, reason, gpus_requested FROM pending_jobs")
            tree = wh.count("account_tree")
        assert pending.filter(pl.col("job_id") == held).rows() == [(held, account, "JobHeldUser", 1)]
        assert tree > 0
    finally:
        slurm.run("scancel", str(held))
