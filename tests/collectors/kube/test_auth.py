"""Kubernetes credentials against a TLS fake API server: kubeconfig (token, client certificate, exec
plugin, contexts), the in-cluster service account, and the errors a wrong CA or token must give.

One CA (trustme) signs the server's certificate for 127.0.0.1 and the client certificate of user
`steward`; the server accepts the bearer token `good-token` or that certificate, and nothing else.
"""

from __future__ import annotations

import base64
import ssl
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import trustme
import yaml

from collectors.kube import KueueReader, connect
from gpusteward.config.kubernetes import KubernetesConfig
from gpusteward.errors import InputError, PermanentError
from tests.collectors.kube.objects import TS, fake_kube
from tests.collectors.kube.server import FakeKube, serve

CLUSTERQUEUES = "/apis/kueue.x-k8s.io/v1beta2/clusterqueues"


@dataclass
class TlsKube:
    url: str
    kube: FakeKube
    ca: trustme.CA
    folder: Path  # ca.crt, client.crt/key, other-ca.crt


@pytest.fixture(scope="module")
def tls_kube(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TlsKube]:
    folder = tmp_path_factory.mktemp("kube-tls")
    ca = trustme.CA()
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(server_ctx)
    server_ctx.verify_mode = ssl.CERT_OPTIONAL  # a client certificate when given must chain to the CA
    ca.configure_trust(server_ctx)
    ca.cert_pem.write_to_path(str(folder / "ca.crt"))
    client = ca.issue_cert("steward@example.org", common_name="steward")
    client.cert_chain_pems[0].write_to_path(str(folder / "client.crt"))
    client.private_key_pem.write_to_path(str(folder / "client.key"))
    trustme.CA().cert_pem.write_to_path(str(folder / "other-ca.crt"))
    kube = fake_kube()
    kube.tokens = {"good-token"}
    kube.cert_users = {"steward"}
    with serve(kube, tls=server_ctx) as url:
        yield TlsKube(url, kube, ca, folder)


def _kubeconfig(path: Path, users: dict[str, dict[str, Any]], current: str, server: str, ca: Path) -> Path:
    """A kubeconfig with one cluster (CA embedded as certificate-authority-data) and a context per user."""
    doc = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [
            {"name": "fake", "cluster": {"server": server, "certificate-authority-data": _b64(ca)}},
        ],
        "users": [{"name": name, "user": user} for name, user in users.items()],
        "contexts": [{"name": name, "context": {"cluster": "fake", "user": name}} for name in users],
        "current-context": current,
    }
    path.write_text(yaml.safe_dump(doc))
    return path


def _b64(path: Path) -> str:
    return base64.b64encode(path.read_bytes()).decode()


def _names(cfg: KubernetesConfig, env: dict[str, str] | None = None) -> list[str]:
    api = connect(cfg, env=env or {})
    try:
        batch, _ = KueueReader(api, "k8s").quotas(TS)
    finally:
        api.close()
    return sorted(batch.frames["quota_snapshots"]["name"])


def _last_seen(tk: TlsKube) -> str:
    with tk.kube.lock:
        return tk.kube.seen[-1]


def test_kubeconfig_with_a_bearer_token_in_the_chosen_context(tls_kube: TlsKube, tmp_path: Path) -> None:
    path = _kubeconfig(
        tmp_path / "config",
        {"stale": {"token": "old-token"}, "ops": {"token": "good-token"}},
        current="stale",
        server=tls_kube.url,
        ca=tls_kube.folder / "ca.crt",
    )
    assert _names(KubernetesConfig(kubeconfig=str(path), context="ops")) == [
        "cluster-queue", "tas-cluster-queue", "team-a-cq",
    ]
    assert _last_seen(tls_kube) == "token:good-token"
    # The current context's user is refused, and the error says by whom and which credentials.
    with pytest.raises(PermanentError, match=r"HTTP 401 Unauthorized.*did not accept the credentials of kubeconfig "
                       r".*context stale, user stale"):
        _names(KubernetesConfig(kubeconfig=str(path)))


def test_kubeconfig_with_a_client_certificate(tls_kube: TlsKube, tmp_path: Path) -> None:
    key = _b64(tls_kube.folder / "client.key")
    user = {"client-certificate": str(tls_kube.folder / "client.crt"), "client-key-data": key}
    path = _kubeconfig(tmp_path / "config", {"cert": user}, "cert", tls_kube.url, tls_kube.folder / "ca.crt")
    assert len(_names(KubernetesConfig(auth="kubeconfig", kubeconfig=str(path)))) == 3
    assert _last_seen(tls_kube) == "cert:steward"


def test_kubeconfig_with_an_exec_credential_plugin(tls_kube: TlsKube, tmp_path: Path) -> None:
    plugin = tmp_path / "plugin.py"
    plugin.write_text(
        "import json, os\n"
        'print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1beta1", "kind": "ExecCredential",'
        ' "status": {"token": os.environ["TOKEN_FOR_TEST"]}}))\n'
    )
    exec_user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1beta1", "command": sys.executable,
                          "args": [str(plugin)], "env": [{"name": "TOKEN_FOR_TEST", "value": "good-token"}]}}
    path = _kubeconfig(tmp_path / "config", {"sso": exec_user}, "sso", tls_kube.url, tls_kube.folder / "ca.crt")
    assert len(_names(KubernetesConfig(kubeconfig=str(path)))) == 3
    assert _last_seen(tls_kube) == "token:good-token"


def _service_account(folder: Path, tk: TlsKube, token: str) -> dict[str, str]:
    folder.mkdir(exist_ok=True)
    (folder / "token").write_text(token)
    (folder / "ca.crt").write_bytes((tk.folder / "ca.crt").read_bytes())
    (folder / "namespace").write_text("gpusteward")
    port = tk.url.rsplit(":", 1)[1]
    return {"KUBERNETES_SERVICE_HOST": "127.0.0.1", "KUBERNETES_SERVICE_PORT": port}


def test_in_cluster_service_account_token_and_ca(tls_kube: TlsKube, tmp_path: Path) -> None:
    env = _service_account(tmp_path / "sa", tls_kube, "good-token")
    cfg = KubernetesConfig(service_account_dir=str(tmp_path / "sa"))  # auth = auto: the pod's account
    assert len(_names(cfg, env)) == 3
    assert _last_seen(tls_kube) == "token:good-token"
    # No service host in the environment: auto falls back to $KUBECONFIG, which is missing here.
    with pytest.raises(InputError, match=r"kubeconfig .*nowhere.*no such file"):
        connect(cfg, env={"KUBECONFIG": str(tmp_path / "nowhere")})
    with pytest.raises(InputError, match=r"KUBERNETES_SERVICE_HOST is not set: not running in a pod"):
        connect(KubernetesConfig(auth="in_cluster", service_account_dir=str(tmp_path / "sa")), env={})


def test_in_cluster_token_rotated_by_the_kubelet_is_read_again(tls_kube: TlsKube, tmp_path: Path) -> None:
    env = _service_account(tmp_path / "sa", tls_kube, "good-token")
    api = connect(KubernetesConfig(auth="in_cluster", service_account_dir=str(tmp_path / "sa")), env=env)
    try:
        api.get(f"{CLUSTERQUEUES}/cluster-queue")
        with tls_kube.kube.lock:
            tls_kube.kube.tokens = {"rotated-token"}
        (tmp_path / "sa" / "token").write_text("rotated-token")
        assert api.get(f"{CLUSTERQUEUES}/cluster-queue")["metadata"]["name"] == "cluster-queue"
        assert _last_seen(tls_kube) == "token:rotated-token"
    finally:
        api.close()
        with tls_kube.kube.lock:
            tls_kube.kube.tokens = {"good-token"}


def test_a_server_certificate_from_another_ca_is_refused_clearly(tls_kube: TlsKube, tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "config", {"ops": {"token": "good-token"}}, "ops", tls_kube.url,
                       tls_kube.folder / "other-ca.crt")
    with tls_kube.kube.lock:
        before = len(tls_kube.kube.seen)
    with pytest.raises(PermanentError, match=r"TLS certificate is not trusted.*CERTIFICATE_VERIFY_FAILED.*kubeconfig"):
        _names(KubernetesConfig(kubeconfig=str(path)))
    with tls_kube.kube.lock:
        assert len(tls_kube.kube.seen) == before  # the token never reached the server
    # The in-cluster CA too: a pod whose ca.crt is not the cluster's.
    env = _service_account(tmp_path / "sa", tls_kube, "good-token")
    (tmp_path / "sa" / "ca.crt").write_bytes((tls_kube.folder / "other-ca.crt").read_bytes())
    with pytest.raises(PermanentError, match=r"not trusted.*in-cluster service account"):
        _names(KubernetesConfig(auth="in_cluster", service_account_dir=str(tmp_path / "sa")), env)


def test_a_wrong_token_is_a_clear_401(tls_kube: TlsKube, tmp_path: Path) -> None:
    (tmp_path / "token").write_text("wrong-token\n")
    cfg = KubernetesConfig(server=tls_kube.url, token_file=str(tmp_path / "token"),
                           ca_file=str(tls_kube.folder / "ca.crt"), timeout=timedelta(seconds=5))
    with pytest.raises(PermanentError, match=r"HTTP 401 Unauthorized: Unauthorized: the API server did not accept the "
                       r"credentials of server https://127.0.0.1:\d+ with the token in .*token"):
        _names(cfg)
    (tmp_path / "token").write_text("good-token\n")
    assert len(_names(cfg)) == 3


def test_config_mistakes_name_the_file_and_what_is_wrong(tls_kube: TlsKube, tmp_path: Path) -> None:
    path = _kubeconfig(tmp_path / "config", {"ops": {"token": "t"}}, "ops", tls_kube.url, tls_kube.folder / "ca.crt")
    with pytest.raises(InputError, match=rf"kubeconfig {path}: Context 'prod' not found"):
        connect(KubernetesConfig(kubeconfig=str(path), context="prod"), env={})
    (tmp_path / "bad").write_text("clusters: [}")
    with pytest.raises(InputError, match=r"kubeconfig .*bad: not a kubeconfig"):
        connect(KubernetesConfig(kubeconfig=str(tmp_path / "bad")), env={})
    with pytest.raises(InputError, match=r"kubernetes.token_file: no such file"):
        connect(KubernetesConfig(server=tls_kube.url, token_file="missing", ca_file=str(tls_kube.folder / "ca.crt")),
                base_dir=str(tmp_path), env={})
    # $KUBECONFIG lists several files, as kubectl allows: the first that exists is read.
    api = connect(KubernetesConfig(), env={"KUBECONFIG": f"{tmp_path / 'absent'}:{path}"})
    assert api.credentials.startswith(f"kubeconfig {path}")
    api.close()
