"""Plan -> approve -> apply -> read back -> rollback on the real Slurm cluster, and a stale plan refused."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors.slurm import QuotaTarget, SacctmgrQuotaWriter, SlurmCli
from gpusteward.domain import Month
from quota.plan import Plan, PlanItem
from service.cli_quota import quota
from tests.configs import config_env
from tests.realslurm.cluster import CLUSTER, SlurmCluster
from warehouse import open_warehouse
from warehouse.quota_store import applies

QOS, ACCOUNT = "steward-q", "steward-a"


@pytest.fixture(autouse=True, scope="module")
def _removed_afterwards(slurm: SlurmCluster) -> Iterator[None]:
    """The cluster is the session's: later tests (the inventory's) must not find this module's account and QOS."""
    yield
    slurm.run("sacctmgr", "-i", "delete", "account", "where", f"name={ACCOUNT}")
    slurm.run("sacctmgr", "-i", "delete", "qos", "where", f"name={QOS}")


def _setup(slurm: SlurmCluster) -> None:
    slurm.run("sacctmgr", "-i", "add", "qos", QOS, check=False)
    slurm.run("sacctmgr", "-i", "add", "account", ACCOUNT, f"Cluster={CLUSTER}", check=False)
    slurm.run("sacctmgr", "-i", "modify", "qos", "where", f"name={QOS}", "set", "GrpTRES=gres/gpu=4")
    slurm.run("sacctmgr", "-i", "modify", "account", "where", f"name={ACCOUNT}", f"cluster={CLUSTER}", "set",
              "GrpTRES=gres/gpu=4")


def _store(db: Path, plan_id: str, qos_to: int, account_to: int) -> None:
    items = (
        PlanItem(CLUSTER, "qos", QOS, "nlp", 4, qos_to, "Raise nlp", "west/eval p95 9h against 1h", "shorter waits"),
        PlanItem(CLUSTER, "account", ACCOUNT, "vision", 4, account_to, "Lower vision", "2.7x share", "frees GPUs"),
    )
    plan = Plan(plan_id, "2026-10", datetime(2026, 11, 1, tzinfo=UTC), items)
    with open_warehouse(db) as wh:
        wh.store_plan(plan.id, Month.parse("2026-10"), plan.created_at, plan.status, dry_run=True,
                      body=plan.to_dict(), items=plan.to_frame())


def _qos_tres(slurm: SlurmCluster) -> str:
    return slurm.run("sacctmgr", "-n", "-P", "show", "qos", QOS, "format=GrpTRES").strip()


def test_plan_approve_apply_rollback(slurm: SlurmCluster, tmp_path: Path) -> None:
    _setup(slurm)
    db = tmp_path / "w.duckdb"
    _store(db, "real-1", 5, 3)
    run = CliRunner(env={**slurm.env, **config_env(tmp_path)}).invoke
    base = ["--db", str(db)]
    assert run(quota, ["apply", "real-1", *base, "--by", "bob"]).exit_code == 1  # not approved yet
    dry = run(quota, ["apply", "real-1", *base, "--by", "bob", "--dry-run"])
    assert dry.exit_code == 0, dry.output
    assert _qos_tres(slurm) == "gres/gpu=4"
    ok = run(quota, ["approve", "real-1", *base, "--by", "alice", "--note", "review 2026-10"])
    assert ok.exit_code == 0, ok.output
    applied = run(quota, ["apply", "real-1", *base, "--by", "bob"])
    assert applied.exit_code == 0, applied.output
    assert _qos_tres(slurm) == "gres/gpu=5"  # sacctmgr show qos shows the new limit
    writer = SacctmgrQuotaWriter(SlurmCli(env=slurm.env))
    assert writer.read_gpu_limit(QuotaTarget("account", ACCOUNT, cluster=CLUSTER)) == 3
    shown = run(quota, ["show", "real-1", *base])
    assert "state: applied" in shown.output
    back = run(quota, ["rollback", "real-1", *base, "--by", "carol"])
    assert back.exit_code == 0, back.output
    assert _qos_tres(slurm) == "gres/gpu=4"
    assert writer.read_gpu_limit(QuotaTarget("account", ACCOUNT, cluster=CLUSTER)) == 4
    with open_warehouse(db) as wh:
        records = applies(wh, "real-1")
    assert [(r.action, r.result) for r in records] == [
        ("apply", "refused"), ("dry-run", "dry-run"), ("apply", "applied"), ("rollback", "rolled-back")]
    done = records[2]
    assert (done.approved_by, done.actor, done.transport) == ("alice", "bob", "sacctmgr")
    assert [(c.before, c.after) for c in done.changes] == [(4, 5), (4, 3)]


def test_stale_plan_is_refused(slurm: SlurmCluster, tmp_path: Path) -> None:
    _setup(slurm)
    db = tmp_path / "w.duckdb"
    _store(db, "real-2", 6, 3)
    run = CliRunner(env={**slurm.env, **config_env(tmp_path)}).invoke
    assert run(quota, ["approve", "real-2", "--db", str(db), "--by", "alice"]).exit_code == 0
    slurm.run("sacctmgr", "-i", "modify", "qos", "where", f"name={QOS}", "set", "GrpTRES=gres/gpu=7")  # by hand
    refused = run(quota, ["apply", "real-2", "--db", str(db), "--by", "bob"])
    assert refused.exit_code == 1
    assert "stale plan" in refused.output
    assert _qos_tres(slurm) == "gres/gpu=7"
    writer = SacctmgrQuotaWriter(SlurmCli(env=slurm.env))
    assert writer.read_gpu_limit(QuotaTarget("account", ACCOUNT, cluster=CLUSTER)) == 4  # nothing written
    with open_warehouse(db) as wh:
        assert [(r.action, r.result) for r in applies(wh, "real-2")] == [("apply", "refused")]
    _setup(slurm)
