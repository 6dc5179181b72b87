"""Where the Kubernetes API server is and how to prove who we are: a kubeconfig, the pod's service account, or a URL.

lightkube reads the kubeconfig (its contexts, certificate authorities, client certificates, bearer
tokens and token files, and exec credential plugins) and builds the TLS context and the request
authentication from it; `KubeApi` sends the requests with them. In a pod, the service account's
token file is re-read when the server answers 401, since the kubelet rotates projected tokens.
docs/kubernetes.md#authentication says why lightkube and what each way needs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lightkube.config.client_adapter import ConnectionParams
from lightkube.config.kubeconfig import KubeConfig, SingleConfig
from lightkube.config.models import Cluster, User
from lightkube.core.exceptions import ConfigError

from collectors.kube.api import KubeApi
from gpusteward.config.kubernetes import KubernetesConfig
from gpusteward.errors import InputError

DEFAULT_KUBECONFIG = "~/.kube/config"


@dataclass(frozen=True)
class Resolved:
    """One way chosen from the config: its kind and the SingleConfig lightkube built for it."""

    way: str  # shown in errors: "kubeconfig /path (context prod)", "in-cluster service account /var/run/..."
    single: SingleConfig


def connect(cfg: KubernetesConfig, *, base_dir: str = ".", env: Mapping[str, str] | None = None) -> KubeApi:
    """A `KubeApi` for the server and credentials `cfg` names (see `KubernetesConfig.auth` for the order)."""
    resolved = resolve(cfg, base_dir=base_dir, env=os.environ if env is None else env)
    params = ConnectionParams(timeout=None, trust_env=False)
    try:
        httpx_params: dict[str, Any] = params.httpx_params(resolved.single)
    except (ConfigError, OSError, ValueError) as exc:  # unreadable CA or client key, bad base64 data
        raise InputError(resolved.way, f"cannot load its certificates: {exc}") from None
    return KubeApi(
        str(httpx_params["base_url"]),
        verify=httpx_params["verify"],
        auth=httpx_params["auth"],
        timeout_s=cfg.timeout.total_seconds(),
        credentials=resolved.way,
    )


def resolve(cfg: KubernetesConfig, *, base_dir: str, env: Mapping[str, str]) -> Resolved:
    """The way `cfg` picks; nothing is sent yet, but every named file must be there."""
    mode = cfg.auth
    if mode == "auto":
        if cfg.server:
            mode = "server"
        elif cfg.kubeconfig:
            mode = "kubeconfig"
        elif env.get("KUBERNETES_SERVICE_HOST") and (Path(cfg.service_account_dir) / "token").is_file():
            mode = "in_cluster"
        else:
            mode = "kubeconfig"
    if mode == "server":
        return _server(cfg, base_dir)
    if mode == "in_cluster":
        return in_cluster(cfg.service_account_dir, env)
    path = _path(cfg.kubeconfig, base_dir) if cfg.kubeconfig else _default_kubeconfig(env)
    return from_kubeconfig(path, cfg.context or None)


def from_kubeconfig(path: Path, context: str | None) -> Resolved:
    way = f"kubeconfig {path}"
    if not path.is_file():
        raise InputError(way, "no such file (set kubernetes.kubeconfig, $KUBECONFIG, or run in a pod)")
    try:
        single = KubeConfig.from_file(path).get(context)
    except ConfigError as exc:  # an unknown context, no current-context
        raise InputError(way, str(exc)) from None
    except Exception as exc:  # YAML or field errors from the parser; the file is the user's, say which
        raise InputError(way, f"not a kubeconfig: {type(exc).__name__}: {exc}") from None
    if single is None:
        raise InputError(way, "no context to use")
    user = single.context.user or "no user"
    return Resolved(f"{way} (context {single.context_name}, user {user})", _with_user(single))


def in_cluster(service_account_dir: str, env: Mapping[str, str]) -> Resolved:
    """The pod's service account: $KUBERNETES_SERVICE_HOST/PORT, its token (re-read on 401) and ca.crt."""
    folder = Path(service_account_dir)
    way = f"in-cluster service account {folder}"
    host, port = env.get("KUBERNETES_SERVICE_HOST"), env.get("KUBERNETES_SERVICE_PORT", "443")
    if not host:
        raise InputError(way, "$KUBERNETES_SERVICE_HOST is not set: not running in a pod")
    for name in ("token", "ca.crt"):
        if not (folder / name).is_file():
            raise InputError(way, f"no {name} (is automountServiceAccountToken off?)")
    if ":" in host:  # IPv6
        host = f"[{host}]"
    config = KubeConfig.from_one(
        cluster=Cluster(server=f"https://{host}:{port}", certificate_auth=str(folder / "ca.crt")),
        user=User(token_file=str(folder / "token")),
    )
    return Resolved(way, _single(config))


def _server(cfg: KubernetesConfig, base_dir: str) -> Resolved:
    if not cfg.server:
        raise InputError("kubernetes.server", "auth = 'server' needs a server URL")
    token_file = str(_path(cfg.token_file, base_dir)) if cfg.token_file else None
    ca = str(_path(cfg.ca_file, base_dir)) if cfg.ca_file else None
    for what, file in (("token_file", token_file), ("ca_file", ca)):
        if file and not Path(file).is_file():
            raise InputError(f"kubernetes.{what}", f"no such file: {file}")
    way = f"server {cfg.server}" + (f" with the token in {token_file}" if token_file else " without a token")
    cluster = Cluster(server=cfg.server, certificate_auth=ca)
    config = KubeConfig.from_one(cluster=cluster, user=User(token_file=token_file))
    return Resolved(way, _single(config))


def _single(config: KubeConfig) -> SingleConfig:
    single = config.get()
    assert single is not None  # from_one sets the current context
    return single


def _with_user(single: SingleConfig) -> SingleConfig:
    # A context without a user (anonymous, or a client certificate on the cluster side only) still connects.
    return single if single.user is not None else single._replace(user=User())


def _default_kubeconfig(env: Mapping[str, str]) -> Path:
    # $KUBECONFIG may list several files (kubectl merges them); lightkube reads one: the first that exists.
    listed = [p for p in env.get("KUBECONFIG", "").split(os.pathsep) if p]
    for p in listed:
        if Path(p).expanduser().is_file():
            return Path(p).expanduser()
    return Path(listed[0] if listed else DEFAULT_KUBECONFIG).expanduser()


def _path(relative: str, base_dir: str) -> Path:
    p = Path(relative).expanduser()
    return p if p.is_absolute() else Path(base_dir) / p
