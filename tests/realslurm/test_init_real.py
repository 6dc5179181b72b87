"""`gpusteward init --from-slurm` on the real test cluster: through the CLI and through slurmrestd."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors.slurm import SlurmCli, SlurmRest
from collectors.slurm.inventory import read_inventory
from gpusteward.config import load_config
from service.cli import cli
from tests.realslurm.cluster import CLUSTER, GPUS_PER_NODE, NODES, PARTITIONS, SlurmCluster


def test_inventory_reads_the_same_cluster_through_cli_and_rest(slurm: SlurmCluster) -> None:
    by_cli = read_inventory(SlurmCli(env=slurm.env))
    rest = SlurmRest(socket=slurm.rest_socket)
    try:
        by_rest = read_inventory(rest=rest)
    finally:
        rest.close()
    for inventory in (by_cli, by_rest):
        assert inventory.cluster == CLUSTER
        assert sorted(a.name for a in inventory.accounts) == ["inference", "ml-research"]
        assert sorted(p.name for p in inventory.partitions) == sorted(PARTITIONS)
        assert inventory.node_gpus == dict.fromkeys(NODES, GPUS_PER_NODE)
        assert {p.gpus for p in inventory.partitions} == {GPUS_PER_NODE * len(NODES)}


def test_an_account_without_an_association_here_is_no_team(slurm: SlurmCluster) -> None:
    """slurmdbd keeps an account after its last association on the cluster is deleted: no jobs can run in it."""
    slurm.run("sacctmgr", "-i", "add", "account", "orphan", f"Cluster={CLUSTER}")
    try:
        slurm.run("sacctmgr", "-i", "delete", "account", "where", "name=orphan", f"cluster={CLUSTER}")
        assert "orphan" in slurm.run("sacctmgr", "-P", "-n", "show", "account", "format=Account").split()
        rest = SlurmRest(socket=slurm.rest_socket)
        try:
            by_rest = read_inventory(rest=rest)
        finally:
            rest.close()
        for inventory in (read_inventory(SlurmCli(env=slurm.env)), by_rest):
            assert sorted(a.name for a in inventory.accounts) == ["inference", "ml-research"]
    finally:
        slurm.run("sacctmgr", "-i", "delete", "account", "where", "name=orphan")


@pytest.mark.parametrize("via", ["cli", "rest"])
def test_init_from_slurm_writes_a_config_that_loads(slurm: SlurmCluster, tmp_path: Path, via: str) -> None:
    out = tmp_path / "gpusteward.toml"
    args = ["init", "--from-slurm", "--out", str(out), "--timezone", "Asia/Shanghai"]
    if via == "rest":
        args += ["--rest-socket", slurm.rest_socket]
    result = CliRunner(env=slurm.env).invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert f"cluster {CLUSTER}, 2 teams" in result.output
    config = load_config(out)
    assert [(c.name, c.gpus, c.timezone) for c in config.clusters] == [
        (CLUSTER, GPUS_PER_NODE * len(NODES), "Asia/Shanghai")]
    assert {name: team.accounts for name, team in config.teams.items()} == {
        "inference": ["inference"], "ml-research": ["ml-research"]}
    scenario_of = {r.match.partition: r.scenario for r in config.rules if r.match.partition}
    assert scenario_of == {"training": "training", "inference": "online_inference",
                           "interactive": "interactive", "batch": "batch_inference"}
    text = out.read_text(encoding="utf-8")
    assert text.count(". GUESS") == 1 + len(PARTITIONS)  # the shares, and each partition's scenario
    again = CliRunner(env=slurm.env).invoke(cli, args)
    assert again.exit_code == 1
    assert "--force" in again.output
