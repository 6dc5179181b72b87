"""The single configuration file: schema, loading and validation."""

from gpusteward.config.loader import load_config, load_config_text
from gpusteward.config.schema import (
    AlertsConfig,
    ClusterConfig,
    Config,
    IdleConfig,
    InferenceReserveLine,
    ProtectionConfig,
    QuotaConfig,
    ReceiverConfig,
    ReportsConfig,
    RuleConfig,
    RuleMatch,
    ScenarioConfig,
    SloConfig,
    TeamConfig,
    WarehouseConfig,
)

__all__ = [
    "AlertsConfig",
    "ClusterConfig",
    "Config",
    "IdleConfig",
    "InferenceReserveLine",
    "ProtectionConfig",
    "QuotaConfig",
    "ReceiverConfig",
    "ReportsConfig",
    "RuleConfig",
    "RuleMatch",
    "ScenarioConfig",
    "SloConfig",
    "TeamConfig",
    "WarehouseConfig",
    "load_config",
    "load_config_text",
]
