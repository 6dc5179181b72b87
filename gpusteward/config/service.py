# ruff: noqa: RUF009  # opt()/req() return dataclass fields carrying help text
"""How `gpusteward serve` runs: where it listens, what it imports and scrapes, how often.

Command-line options of `serve` override these; everything here has a default, so a config
without a `[service]` table runs the service as before (folders and intervals from the CLI).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Literal

from gpusteward.config.fields import opt, req

# What file transfers and editors leave beside real files: hidden files and folders (dotfiles,
# rsync's `.name.XXXXXX` temporaries), `*.tmp`, partial downloads (`*.partial`, `*.part`,
# curl/wget/browsers) and editor backups. Writers that rename a finished file into place are never
# read half-written.
DEFAULT_IMPORT_IGNORE = (".*", "*.tmp", "*.partial", "*.part", "*.swp", "*~")


@dataclass(frozen=True)
class ScrapeSourceConfig:
    name: str = req("source name: the job `collect:<name>` in /metrics, status and logs")
    kind: Literal["dcgm", "inference"] = opt(
        "dcgm", "dcgm: dcgm-exporter endpoints -> GPU-minutes; inference: vLLM/SGLang/TGI/Triton/gateway -> windows"
    )
    targets: list[str] = opt([], "host:port or URLs of the exporters")
    file_sd: str | None = opt(
        None, "Prometheus file_sd JSON target list, relative to the config file; re-read every cycle"
    )
    cluster: str = opt("default", "cluster of the GPUs behind targets without a `cluster` label")
    interval: timedelta = opt(timedelta(seconds=30), "time between scrapes of every target")
    timeout: timedelta = opt(timedelta(seconds=10), "per-target limit for connecting and reading the answer")


@dataclass(frozen=True)
class SlurmQueueConfig:
    name: str = req("source name: the job `collect:<name>` in /metrics, status and logs")
    cluster: str = req("Slurm cluster name (ClusterName) whose queue is read")
    rest_socket: str | None = opt(None, "slurmrestd unix socket (rest_auth/local); neither this nor rest_url: the CLI")
    rest_url: str | None = opt(None, "slurmrestd URL (rest_auth/jwt; the token from $SLURM_JWT)")
    rest_user: str | None = opt(None, "user name sent with the JWT")
    interval: timedelta = opt(
        timedelta(minutes=5), "time between snapshots of the queue: pending jobs and reasons, quotas, GPUs in use"
    )


@dataclass(frozen=True)
class KubeQueueConfig:
    name: str = req("source name: the job `collect:<name>` in /metrics, status and logs")
    scheduler: Literal["kueue", "volcano"] = req("kueue: ClusterQueues' GPU nominalQuota; volcano: Queues' capability")
    cluster: str = req("cluster name the snapshots are stored under (as rules and teams name it)")
    kueue_version: str = opt("v1beta2", "Kueue API version: v1beta2, or v1beta1 before Kueue 0.15")
    interval: timedelta = opt(timedelta(minutes=5), "time between snapshots of the queues' GPU limits")
    jobs: bool = opt(False, "kueue only: also read every Workload as a job record at each snapshot (the job feed)")
    team_label: str = opt(
        "", "kueue jobs: the Workload label whose value is the job's account; empty, or a Workload without it:"
        " the job's ClusterQueue is its account"
    )


Role = Literal["viewer", "operator", "approver", "admin"]
"""What a control API caller may do; each role includes the ones before it (service/api_tokens.py)."""
LOOPBACK = ["127.0.0.0/8", "::1/128"]


@dataclass(frozen=True)
class ProxyIdentityConfig:
    user_header: str = opt(
        "",
        "request header in which an authenticating proxy (oauth2-proxy, Apache mod_auth_*, an SSO gateway) names "
        "the signed-in user, e.g. X-Forwarded-User; empty: identity comes from tokens only",
    )
    groups_header: str = opt("", "header with the user's groups, comma-separated (e.g. X-Forwarded-Groups)")
    trusted_proxies: list[str] = opt(
        list(LOOPBACK), "addresses or networks (CIDR) of the proxies allowed to send user_header; others are refused"
    )
    require_token: bool = opt(
        False,
        "believe user_header only on a request that also carries a valid token (the proxy's own): on a host "
        "where others can reach loopback, the address alone does not tell the proxy from them",
    )
    roles: dict[str, Role] = opt(
        {}, "the role of each proxy user (`alice = \"approver\"`) or group (`\"group:gpu-admins\" = \"admin\"`)"
    )


@dataclass(frozen=True)
class ServiceConfig:
    listen: str = opt("127.0.0.1:9464", "host:port of /metrics, /healthz, /readyz and the control API")
    read_model: str = opt("", "folder the read model is published to; empty: readmodel/ beside the warehouse")
    import_dirs: list[str] = opt([], "folders whose new files are imported, relative to the config file")
    import_ignore: list[str] = opt(
        list(DEFAULT_IMPORT_IGNORE),
        "globs on file and folder names the folder imports never read (hidden files, temporaries, partial copies)",
    )
    import_interval: timedelta = opt(timedelta(minutes=5), "how often the import folders are looked at")
    evaluate_interval: timedelta = opt(timedelta(minutes=15), "how often the evaluation runs when new data arrived")
    alerts_interval: timedelta = opt(timedelta(minutes=5), "how often protection lines are checked and alerts sent")
    publish_interval: timedelta = opt(
        timedelta(minutes=5),
        "how long live scrapes' minutes may wait before the read model is published again (imports, evaluations"
        " and control actions publish at once)",
    )
    token_files: list[str] = opt(
        [],
        "control API token files: hashed per-person entries with a role (`gpusteward api-token`), or identity:token",
    )
    proxy: ProxyIdentityConfig = opt(
        ProxyIdentityConfig(), "identity from a trusted authenticating proxy's header, and the role of each user"
    )
    separation_of_duties: bool = opt(
        False, "whoever proposed a quota plan cannot approve it, and whoever approved it cannot apply it"
    )
    tls_cert: str = opt("", "PEM certificate (chain) the API serves HTTPS with; needed off loopback, with tls_key")
    tls_key: str = opt("", "PEM private key of tls_cert; keep it readable by the service only")
    insecure_listen: bool = opt(
        False, "serve plain HTTP on a non-loopback listen address anyway (warned about at every start)"
    )
    scrape: list[ScrapeSourceConfig] = opt([], "live sources scraped by the service, each on its own interval")
    slurm: list[SlurmQueueConfig] = opt([], "live Slurm clusters whose queue the service snapshots on an interval")
    kube_queues: list[KubeQueueConfig] = opt(
        [], "live Kueue or Volcano clusters whose queues' GPU limits the service snapshots (server: [kubernetes])"
    )
