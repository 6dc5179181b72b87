"""`[showback]`: prices read as exact decimals, and every bad key named with what is wrong."""

from __future__ import annotations

from decimal import Decimal

import pytest

from gpusteward.config import load_config_text
from gpusteward.errors import ConfigError

TEAMS = """
[[clusters]]
name = "east"
[teams.platform]
entitled_share = 0.1
"""


def _problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        load_config_text(TEAMS + text, source="c.toml")
    return caught.value.problems


def test_prices_are_exact_decimals_as_the_file_writes_them() -> None:
    config = load_config_text(TEAMS + """
[showback]
currency = "EUR"
gpu_hour = 0.1
kwh = "0.135"
unallocated = "platform"
platform_team = "platform"
[[showback.prices]]
model = "*H100*"
mig_profile = "1g.10gb"
gpu_hour = 3
[[showback.windows]]
name = "night"
hours = "22:00-06:30"
days = ["fri"]
energy_factor = 0.5
""")
    sb = config.showback
    assert (sb.gpu_hour, sb.kwh, sb.prices[0].gpu_hour) == (Decimal("0.1"), Decimal("0.135"), Decimal(3))
    assert sb.gpu_hour * 3 == Decimal("0.3")  # not 0.30000000000000004
    assert (sb.windows[0].gpu_factor, sb.windows[0].energy_factor) == (Decimal(1), Decimal("0.5"))


def test_every_bad_key_is_named() -> None:
    problems = _problems("""
[showback]
currency = "euro"
gpu_hour = -1
kwh = "cheap"
unallocated = "everyone"
[[showback.prices]]
cluster = "west"
mig_profile = "half"
gpu_hour = 2
[[showback.windows]]
name = "peak"
hours = "09:10-21:00"
days = []
gpu_factor = -2
[[showback.windows]]
name = "peak"
hours = "25:00-26:00"
""")
    assert problems == [
        "showback.kwh: expected a number, got \"cheap\"",
        "showback.unallocated: expected one of 'none', 'proportional', 'platform', got \"everyone\"",
        "showback.currency: expected an ISO 4217 code of three capital letters (USD), got 'euro'",
        "showback.gpu_hour: expected 0 or more, got -1",
        "showback.prices[0].cluster: 'west' matches none of the clusters (east)",
        "showback.prices[0].mig_profile: expected a MIG profile such as \"1g.10gb\", got 'half'",
        "showback.windows[0].hours: expected HH:MM-HH:MM on the quarter hour (09:00-21:30), start and end apart,"
        " got '09:10-21:00'",
        "showback.windows[0].days: expected at least one weekday",
        "showback.windows[0].gpu_factor: expected 0 or more, got -2",
        "showback.windows[1].name: duplicate window 'peak'",
        "showback.windows[1].hours: expected HH:MM-HH:MM on the quarter hour (09:00-21:30), start and end apart,"
        " got '25:00-26:00'",
    ]


def test_platform_needs_a_known_team() -> None:
    assert _problems('[showback]\nunallocated = "platform"\n') == [
        'showback.platform_team: required when showback.unallocated is "platform"']
    assert _problems('[showback]\nunallocated = "platform"\nplatform_team = "ops"\n') == [
        "showback.platform_team: unknown team 'ops'"]
