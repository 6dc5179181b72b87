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
    "example_config_path",
    "load_config",
    "load_config_text",
]


def example_config_path() -> str:
    """The packaged example config (also at examples/gpusteward.toml): the simulated demo pool."""
    from importlib import resources

    return str(resources.files("gpusteward.config").joinpath("example.toml"))
