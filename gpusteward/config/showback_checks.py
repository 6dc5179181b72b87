"""Cross-field checks of `[showback]`: each problem names its key (`showback.prices[0].gpu_hour: ...`)."""

from __future__ import annotations

import re
from decimal import Decimal
from fnmatch import fnmatchcase

from gpusteward.config.schema import Config

_HOURS = re.compile(r"(\d\d?):(\d\d)-(\d\d?):(\d\d)")
_CURRENCY = re.compile(r"[A-Z]{3}")
_PROFILE = re.compile(r"\d+g\.\d+gb(\+\w+)?|\*")


def _not_negative(path: str, value: Decimal) -> list[str]:
    return [] if value >= 0 else [f"{path}: expected 0 or more, got {value}"]


def window_minutes(hours: str) -> tuple[int, int] | None:
    """"HH:MM-HH:MM" as minutes of the day on the quarter hour, or None when it is not one."""
    found = _HOURS.fullmatch(hours.replace(" ", ""))
    if found is None:
        return None
    ah, am, bh, bm = (int(g) for g in found.groups())
    if ah > 24 or bh > 24 or am % 15 or bm % 15 or am >= 60 or bm >= 60:
        return None
    start, end = ah * 60 + am, bh * 60 + bm
    return None if start > 1440 or end > 1440 or start == end else (start, end)


def check_showback(config: Config) -> list[str]:
    """Every problem of `[showback]`, its prices and windows."""
    sb = config.showback
    problems: list[str] = []
    if not _CURRENCY.fullmatch(sb.currency):
        problems.append(
            f"showback.currency: expected an ISO 4217 code of three capital letters (USD), got {sb.currency!r}"
        )
    problems += _not_negative("showback.gpu_hour", sb.gpu_hour) + _not_negative("showback.kwh", sb.kwh)
    clusters = [c.name for c in config.clusters]
    for i, rule in enumerate(sb.prices):
        path = f"showback.prices[{i}]"
        problems += _not_negative(f"{path}.gpu_hour", rule.gpu_hour)
        if clusters and not any(fnmatchcase(name, rule.cluster) for name in clusters):
            problems.append(f"{path}.cluster: {rule.cluster!r} matches none of the clusters ({', '.join(clusters)})")
        if rule.mig_profile and not _PROFILE.fullmatch(rule.mig_profile):
            problems.append(f"{path}.mig_profile: expected a MIG profile such as \"1g.10gb\", got {rule.mig_profile!r}")
    seen: set[str] = set()
    for i, window in enumerate(sb.windows):
        path = f"showback.windows[{i}]"
        if window.name in seen:
            problems.append(f"{path}.name: duplicate window {window.name!r}")
        seen.add(window.name)
        if window_minutes(window.hours) is None:
            problems.append(
                f"{path}.hours: expected HH:MM-HH:MM on the quarter hour (09:00-21:30), start and end apart,"
                f" got {window.hours!r}"
            )
        if not window.days:
            problems.append(f"{path}.days: expected at least one weekday")
        problems += _not_negative(f"{path}.gpu_factor", window.gpu_factor)
        problems += _not_negative(f"{path}.energy_factor", window.energy_factor)
    if sb.unallocated == "platform":
        if not sb.platform_team:
            problems.append("showback.platform_team: required when showback.unallocated is \"platform\"")
        elif sb.platform_team not in config.teams:
            problems.append(f"showback.platform_team: unknown team {sb.platform_team!r}")
    elif sb.platform_team and sb.platform_team not in config.teams:
        problems.append(f"showback.platform_team: unknown team {sb.platform_team!r}")
    return problems
