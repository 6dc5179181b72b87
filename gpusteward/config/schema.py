"""Configuration schema: defaults in code, grouped by concern, one line of help per field.

Every field's help text is its documentation; `tests/gpusteward/test_config_docs.py` fails when
a field is missing from docs/config.md.
"""

from __future__ import annotations

from dataclasses import MISSING, dataclass, field
from datetime import timedelta
from typing import Literal

from gpusteward.config.alerting import AlertEngineConfig, OutboxConfig, SilenceConfig
from gpusteward.config.capacity import CapacityConfig
from gpusteward.config.fields import opt, req
from gpusteward.config.inference import InferenceConfig
from gpusteward.config.kubernetes import KubernetesConfig
from gpusteward.config.limits import LimitsConfig
from gpusteward.config.protection import InferenceReserveLine as InferenceReserveLine  # noqa: PLC0414 - re-exported
from gpusteward.config.protection import ProtectionConfig as ProtectionConfig  # noqa: PLC0414 - re-exported
from gpusteward.config.reclaim import ReclaimConfig
from gpusteward.config.service import ServiceConfig
from gpusteward.config.showback import ShowbackConfig
from gpusteward.domain import Scenario


@dataclass(frozen=True)
class WarehouseConfig:
    path: str = opt("gpusteward.duckdb", "DuckDB file of the warehouse, relative to the config file")
    threads: int = opt(2, "DuckDB worker threads")
    memory_limit: str = opt("4GB", "DuckDB memory limit, e.g. 4GB")


@dataclass(frozen=True)
class ClusterConfig:
    name: str = req("cluster name as the scheduler and the exporters label it")
    timezone: str = opt("UTC", "IANA time zone of the cluster's business hours")
    gpus: int = opt(0, "GPUs in the cluster; 0 means: count the GPUs seen in telemetry")


@dataclass(frozen=True)
class TeamConfig:
    entitled_share: float = req("fraction of the pool's GPU-hours the team is entitled to (0..1)")
    display_name: str = opt("", "name shown in reports; defaults to the team key")
    accounts: list[str] = opt([], "scheduler accounts that belong to the team")
    min_gpus: int = opt(0, "GPUs the quota recommender never goes below")
    cluster_shares: dict[str, float] = opt(
        {}, "entitled fraction of each named cluster's guaranteed GPUs (0..1); other clusters use entitled_share"
    )


@dataclass(frozen=True)
class RuleMatch:
    cluster: str | None = opt(None, "glob on the cluster name")
    partition: str | None = opt(None, "glob on the Slurm partition")
    qos: str | None = opt(None, "glob on the Slurm QOS")
    account: str | None = opt(None, "glob on the Slurm account")
    namespace: str | None = opt(None, "glob on the Kubernetes namespace")
    labels: dict[str, str] = opt({}, "label globs that must all match (Kubernetes labels)")


@dataclass(frozen=True)
class RuleConfig:
    scenario: Scenario = req("scenario of the work the rule matches")
    match: RuleMatch = opt(RuleMatch(), "conditions, all of which must hold; empty matches everything")
    team: str | None = opt(None, "team of the matched work; when unset, the team whose accounts list the job's account")


@dataclass(frozen=True)
class SloConfig:
    indicator: str = req("indicator name from the catalogue (docs/config.md#indicators)")
    threshold: float = req('objective: a duration ("30m") for time indicators, a number otherwise')
    target: float | None = opt(
        None,
        "share of good events (waits, requests within the threshold) the window must reach; indicators"
        " named pNN default to NN% (p95: 0.95, max: 1.0); only for percentile indicators",
    )
    window: str = opt(
        "month", 'window the objective is judged over: "month" (the calendar month in the pool\'s time zone)'
        ' or a rolling window ending at the review\'s end, 1d to 28d (e.g. "7d", "28d")',
    )


@dataclass(frozen=True)
class ScenarioConfig:
    slos: list[SloConfig] = opt([], "objectives of the scenario")
    defaults: bool = opt(True, "add the built-in objectives (docs/evaluation.md#defaults) for indicators slos omits")
    idle_limit: timedelta | None = opt(None, "interactive: idle time after which a session should be reclaimed (2h)")
    lifecycle_limit: timedelta | None = opt(None, "interactive: longest a session may hold GPUs (12h)")
    deadline: timedelta | None = opt(None, "batch_inference: a record should complete this long after submit (24h)")
    reproducibility_fields: list[str] = opt(
        ["comment"], "fine_tuning: job record fields searched for the reproducibility keys (comment, name)"
    )
    reproducibility_keys: list[str] = opt(
        ["base_model", "dataset", "seed"], "fine_tuning: keys (key=value) a record must carry to be reproducible"
    )


@dataclass(frozen=True)
class IdleConfig:
    util_below: float = opt(5.0, "a GPU-minute is idle when utilisation (percent) is below this")
    min_minutes: int = opt(30, "idle only counts in runs of at least this many minutes")
    held_memory_mib: float = opt(1024.0, "idle minutes with more GPU memory used than this are idle-held")


@dataclass(frozen=True)
class ReceiverConfig:
    name: str = req("receiver name, referenced by protection lines")
    kind: Literal["webhook", "jsonl", "alertmanager", "slack", "feishu", "dingtalk", "wecom"] = req(
        "webhook: signed Alertmanager-style JSON to url; jsonl: append to path; alertmanager: its v2 API at url;"
        " slack, feishu, dingtalk, wecom: the bot webhook at url (or url_env)"
    )
    url: str | None = opt(None, "URL of the webhook, Alertmanager or bot")
    url_env: str | None = opt(
        None, "environment variable holding the URL instead (bot URLs carry tokens); never printed"
    )
    path: str | None = opt(None, "file to append alerts to (kind jsonl), relative to the config file")
    secret_env: str | None = opt(None, "environment variable holding the HMAC signing secret; never printed")
    previous_secret_env: str | None = opt(
        None, "environment variable holding the previous signing secret while it is rotated (webhook); never printed"
    )
    language: Literal["en", "zh"] = opt(
        "en", "language of chat messages (slack, feishu, dingtalk, wecom); times in the pool's timezone"
    )
    timeout: timedelta = opt(timedelta(seconds=10), "delivery timeout")


@dataclass(frozen=True)
class AlertsConfig:
    receivers: list[ReceiverConfig] = opt([], "where alerts go")
    engine: AlertEngineConfig = opt(
        AlertEngineConfig(), "the alert engine: for, grouping, repeat, inhibition, shadow mode"
    )
    outbox: OutboxConfig = opt(OutboxConfig(), "delivery retries of the persisted outbox")
    silences: list[SilenceConfig] = opt([], "silences kept in the config (the control API adds its own)")


@dataclass(frozen=True)
class ReportsConfig:
    schedule: str = opt("0 8 1 * *", "cron schedule of the monthly review")
    timezone: str = opt("", "time zone of the schedule; empty: the pool's `timezone`")

    def zone(self, pool_zone: str) -> str:
        """The schedule's time zone: its own, else the pool's."""
        return self.timezone or pool_zone
    languages: list[Literal["en", "zh"]] = opt(["en"], "languages of the review")
    formats: list[Literal["md", "html", "pdf"]] = opt(["md"], "formats of the review")
    out_dir: str = opt("reports", "folder the reviews are written to, relative to the config file")


@dataclass(frozen=True)
class QuotaConfig:
    max_step: float = opt(0.25, "largest relative change of one quota in one plan")
    business_hours: str = opt("09:00-21:00", "local business hours (HH:MM-HH:MM); a right-sizing cut keeps their peak")
    headroom_gpus: int = opt(2, "GPUs above the business-hours peak a right-sizing cut keeps")
    min_gain: float = opt(0.10, "smallest relative fall of a wait p95 the replay must show for a change to be proposed")
    max_oversubscription: float = opt(
        1.0, "a plan's raises never take a cluster's limits past this multiple of its guaranteed GPUs (nor past"
        " their current sum where that is already higher)",
    )
    protected_scenarios: list[Scenario] = opt(
        [Scenario.ONLINE_INFERENCE, Scenario.INTERACTIVE],
        "scenarios whose replayed wait p95 a plan may not lengthen without an override at approval",
    )


@dataclass(frozen=True)
class DashboardConfig:
    url: str = opt(
        "",
        "public base URL of the dashboard as its viewers open it (https://gpus.example.org/steward); the review's"
        " findings and the alerts link to its pages with their filters; empty: no links are written",
    )


@dataclass(frozen=True)
class Config:
    apiVersion: Literal["gpusteward/v1"] = opt("gpusteward/v1", "version of this file's schema")
    timezone: str = opt(
        "UTC", "IANA time zone of the pool: where the review's months and days begin (UTC, or e.g. Asia/Shanghai);"
        " business hours and peak windows keep their clusters' and lines' own zones",
    )
    warehouse: WarehouseConfig = opt(WarehouseConfig(), "where the data lives")
    clusters: list[ClusterConfig] = opt([], "the GPU clusters of the pool")
    teams: dict[str, TeamConfig] = opt({}, "teams, keyed by their short name")
    rules: list[RuleConfig] = opt([], "map work to a scenario and a team; first match wins")
    scenarios: dict[Scenario, ScenarioConfig] = opt({}, "objectives per scenario")
    idle: IdleConfig = opt(IdleConfig(), "idle detection thresholds")
    protection: ProtectionConfig = opt(ProtectionConfig(), "protection lines")
    alerts: AlertsConfig = opt(AlertsConfig(), "alert receivers")
    reports: ReportsConfig = opt(ReportsConfig(), "the monthly review")
    quota: QuotaConfig = opt(QuotaConfig(), "the quota recommender")
    inference: InferenceConfig = opt(InferenceConfig(), "inference-server metric mappings added to the built-ins")
    service: ServiceConfig = opt(ServiceConfig(), "how `gpusteward serve` runs: listen address, imports, live scrapes")
    limits: LimitsConfig = opt(LimitsConfig(), "bounds on every file and scrape the collectors read")
    reclaim: ReclaimConfig = opt(
        ReclaimConfig(), "idle GPUs reclaimed by policy: warn the owner, then act (docs/reclaim.md)"
    )
    dashboard: DashboardConfig = opt(DashboardConfig(), "the dashboard the review and the alerts link to")
    capacity: CapacityConfig = opt(CapacityConfig(), "how GPUs count: shared (time-sliced) GPUs by their fraction")
    kubernetes: KubernetesConfig = opt(
        KubernetesConfig(), "the Kubernetes API server of Kueue and Volcano, and the credentials to reach it"
    )
    showback: ShowbackConfig = opt(
        ShowbackConfig(), "prices, and how the capacity nobody was allocated is charged (docs/showback.md)"
    )
    base_dir: str = field(default=".", metadata={"help": "", "internal": True})

    def resolve(self, relative: str) -> str:
        """A path from the config, resolved against the config file's folder."""
        from pathlib import Path

        p = Path(relative)
        return str(p if p.is_absolute() else Path(self.base_dir) / p)


FIELD_ALIASES = {"for_": "for"}
"""Python names that differ from their TOML keys."""

REQUIRED = MISSING
