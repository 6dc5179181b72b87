"""`gpusteward quota apply --scheduler kueue` with the Kubernetes credentials of a kubeconfig context,
of the config's [kubernetes] table, or of a pod (refused clearly outside one)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gpusteward.domain import Month
from quota.plan import Plan, PlanItem
from service.cli import cli
from tests.collectors.kube.objects import serving_recorded
from tests.collectors.kube.server import FakeKube
from tests.sla.builders import T0
from warehouse import open_warehouse

CQ = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues/tas-cluster-queue"


@pytest.fixture
def kube() -> Iterator[tuple[FakeKube, str]]:
    with serving_recorded("ops-token") as served:
        yield served


def _approved_plan(tmp_path: Path, extra_config: str = "") -> list[str]:
    config, db = tmp_path / "gpusteward.toml", tmp_path / "gpusteward.duckdb"
    config.write_text('[[clusters]]\nname = "k8s"\n' + extra_config, encoding="utf-8")
    item = PlanItem("k8s", "clusterqueue", "tas-cluster-queue", "nlp", 16, 20, "[]", "[]", "[]")
    plan = Plan("2026-03-kube", "2026-03", T0, (item,))
    with open_warehouse(db) as wh:
        wh.store_plan(plan.id, Month(2026, 3), T0, plan.status, dry_run=True, body=plan.to_dict(),
                      items=plan.to_frame())
    base = ["--config", str(config), "--db", str(db)]
    approved = CliRunner().invoke(cli, ["quota", "approve", plan.id, *base, "--by", "alice"])
    assert approved.exit_code == 0, approved.output
    return [plan.id, *base, "--by", "bob", "--scheduler", "kueue"]


def _kubeconfig(path: Path, url: str) -> Path:
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "dev",
        "clusters": [{"name": "fake", "cluster": {"server": url}}],
        "users": [{"name": "dev", "user": {"token": "dev-token"}}, {"name": "ops", "user": {"token": "ops-token"}}],
        "contexts": [{"name": "dev", "context": {"cluster": "fake", "user": "dev"}},
                     {"name": "ops", "context": {"cluster": "fake", "user": "ops"}}],
    }))
    return path


def _nominal(kube: FakeKube) -> object:
    return kube.objects[CQ]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][2]["nominalQuota"]


def test_apply_with_a_kubeconfig_context(kube: tuple[FakeKube, str], tmp_path: Path) -> None:
    fake, url = kube
    args = _approved_plan(tmp_path)
    path = _kubeconfig(tmp_path / "kubeconfig", url)
    applied = CliRunner().invoke(cli, ["quota", "apply", *args, "--kubeconfig", str(path), "--kube-context", "ops"])
    assert applied.exit_code == 0, applied.output
    assert (_nominal(fake), set(fake.seen)) == ("20", {"token:ops-token"})


def test_apply_with_the_config_kubernetes_table(kube: tuple[FakeKube, str], tmp_path: Path) -> None:
    fake, url = kube
    _kubeconfig(tmp_path / "kubeconfig", url)
    args = _approved_plan(tmp_path, '[kubernetes]\nkubeconfig = "kubeconfig"\ncontext = "ops"\n')
    applied = CliRunner().invoke(cli, ["quota", "apply", *args])
    assert applied.exit_code == 0, applied.output
    assert _nominal(fake) == "20"


def test_credentials_that_cannot_work_are_refused_before_anything_is_written(
    kube: tuple[FakeKube, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake, url = kube
    args = _approved_plan(tmp_path)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    outside = CliRunner().invoke(cli, ["quota", "apply", *args, "--in-cluster"])
    assert outside.exit_code != 0
    assert "KUBERNETES_SERVICE_HOST is not set: not running in a pod" in outside.output
    path = _kubeconfig(tmp_path / "kubeconfig", url)
    wrong = CliRunner().invoke(cli, ["quota", "apply", *args, "--kubeconfig", str(path)])  # current: dev
    assert wrong.exit_code != 0
    assert "HTTP 401 Unauthorized" in wrong.output
    assert "context dev, user dev" in wrong.output
    assert (_nominal(fake), fake.patches) == (16, [])
