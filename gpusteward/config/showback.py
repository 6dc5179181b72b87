# ruff: noqa: RUF009  # opt()/req() return dataclass fields carrying help text
"""Prices and the showback model of the config (docs/showback.md).

Every price is a Decimal, read from the file's text (a TOML float 0.1 is Decimal("0.1"), not the
binary float), so that costs add up to the cent. A GPU's price is per whole-GPU-equivalent hour:
a rule without `mig_profile` prices a whole card, and a MIG slice or a time-sliced share pays the
card's price times its share; a rule with `mig_profile` prices one slice-hour of that profile.
Time-of-day windows multiply the prices inside them, in the pool's time zone.

`unallocated` follows OpenCost's idle cost: by default the capacity nobody was allocated is its own
line (OpenCost's `__idle__` allocation, `includeIdle`); `proportional` shares it among the cluster's
allocations by their GPU cost (OpenCost's `shareIdle`, which shares idle per cluster and per resource
in proportion to each allocation's cost of that resource); `platform` charges it to one named team.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal

from gpusteward.config.fields import opt, req

Distribution = Literal["none", "proportional", "platform"]
Weekday = Literal["mon", "tue", "wed", "thu", "fri", "sat", "sun"]
WEEKDAYS: tuple[Weekday, ...] = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


@dataclass(frozen=True)
class PriceRule:
    gpu_hour: Decimal = req(
        "price of one hour on the GPUs the rule matches: a whole card's, or with mig_profile set, one slice's"
    )
    cluster: str = opt("*", "glob on the cluster name")
    model: str = opt("*", 'glob on the GPU model as DCGM names it (modelName), e.g. "*H100*"')
    mig_profile: str = opt(
        "", 'MIG profile the price is for, e.g. "1g.10gb" (a slice-hour); empty: a whole card, whose slices and'
        " shared parts pay the card's price times their share"
    )


@dataclass(frozen=True)
class PriceWindow:
    name: str = req("name of the window, unique among the windows")
    hours: str = req(
        'local time of day "HH:MM-HH:MM" in the pool\'s time zone, on the quarter hour; an end before the start'
        " runs past midnight"
    )
    days: list[Weekday] = opt(list(WEEKDAYS), "weekdays (mon..sun) the window starts on")
    gpu_factor: Decimal = opt(Decimal(1), "multiplies the GPU-hour price inside the window")
    energy_factor: Decimal = opt(Decimal(1), "multiplies the kWh price inside the window")


@dataclass(frozen=True)
class ShowbackConfig:
    currency: str = opt("USD", "ISO 4217 code of every price and cost (USD, EUR, CNY)")
    gpu_hour: Decimal = opt(Decimal(0), "price of one whole-GPU-hour on GPUs no [[showback.prices]] rule matches")
    kwh: Decimal = opt(Decimal(0), "price of one kWh of GPU energy (from DCGM's energy counter)")
    prices: list[PriceRule] = opt([], "GPU-hour prices by cluster, model and MIG profile; the first matching rule wins")
    windows: list[PriceWindow] = opt(
        [], "time-of-day windows that scale the prices; the first window holding a moment decides"
    )
    unallocated: Distribution = opt(
        "none",
        "capacity nobody was allocated: none (its own line), proportional (shared in each cluster by the"
        " allocations' GPU cost, as OpenCost's shareIdle), platform (charged to platform_team)",
    )
    platform_team: str = opt("", "team charged the unallocated capacity when unallocated = \"platform\"")
