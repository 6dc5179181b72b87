# ruff: noqa: RUF009  # opt() returns dataclass fields carrying help text
"""Where the Kubernetes client (Kueue and Volcano readers, quota writes) finds its API server and credentials.

The keys only name the sources; `collectors.kube.auth` reads them (docs/kubernetes.md#authentication).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from gpusteward.config.fields import opt

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"

KubeAuthMode = Literal["auto", "kubeconfig", "in_cluster", "server"]


@dataclass(frozen=True)
class KubernetesConfig:
    auth: KubeAuthMode = opt(
        "auto",
        "auto: `server` if set, else `kubeconfig` if set, else the pod's service account when"
        " $KUBERNETES_SERVICE_HOST is set, else $KUBECONFIG or ~/.kube/config; or force one of"
        " kubeconfig, in_cluster, server",
    )
    kubeconfig: str = opt("", "kubeconfig file, relative to the config file; empty: $KUBECONFIG or ~/.kube/config")
    context: str = opt("", "kubeconfig context (cluster, user, namespace) to use; empty: its current-context")
    service_account_dir: str = opt(
        SERVICE_ACCOUNT_DIR, "in_cluster: folder of the mounted service-account token and the cluster's ca.crt"
    )
    server: str = opt("", "API server URL, used with token_file and ca_file instead of a kubeconfig")
    token_file: str = opt("", "server: file holding the bearer token (re-read when the server answers 401)")
    ca_file: str = opt("", "server: PEM CA bundle the API server's certificate must chain to; empty: the system's")
    timeout: timedelta = opt(timedelta(seconds=30), "limit on each request to the API server")
