"""Checks across fields: references resolve, shares add up, indicators fit their scenario."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from gpusteward.config.schema import Config, ScenarioConfig, SloConfig
from gpusteward.domain import Scenario
from gpusteward.indicators import INDICATORS, Unit
from gpusteward.tables import JOBS

_TEXT_JOB_FIELDS = frozenset(name for name, dtype in JOBS.items() if dtype == pl.Utf8)
_MULTIPLES = frozenset({"share_over_entitlement"})


def _zone_ok(name: str) -> bool:
    try:
        ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        return False
    return True


def _clusters(config: Config) -> list[str]:
    problems = []
    names = [c.name for c in config.clusters]
    for i, c in enumerate(config.clusters):
        if names.count(c.name) > 1:
            problems.append(f"clusters[{i}].name: duplicate cluster {c.name!r}")
        if not _zone_ok(c.timezone):
            problems.append(f"clusters[{i}].timezone: unknown time zone {c.timezone!r}")
    return problems


def _teams_and_rules(config: Config) -> list[str]:
    problems = []
    for name, team in config.teams.items():
        if not 0.0 <= team.entitled_share <= 1.0:
            problems.append(
                f"teams.{name}.entitled_share: expected a fraction between 0 and 1, got {team.entitled_share}"
            )
    total = sum(t.entitled_share for t in config.teams.values())
    if total > 1.0 + 1e-9:
        problems.append(f"teams: entitled shares add up to {total:.2f}, more than the whole pool (1.0)")
    for i, rule in enumerate(config.rules):
        if rule.team is not None and rule.team not in config.teams:
            problems.append(f"rules[{i}].team: unknown team {rule.team!r}")
    return problems


def _slo(path: str, scenario: Scenario, slo: SloConfig) -> list[str]:
    problems = []
    ind = INDICATORS.get(slo.indicator)
    if ind is None:
        problems.append(f"{path}.indicator: unknown indicator {slo.indicator!r}")
    elif scenario not in ind.scenarios:
        problems.append(f"{path}.indicator: {slo.indicator!r} does not apply to scenario {scenario.value!r}")
    elif ind.unit is Unit.RATIO and slo.indicator not in _MULTIPLES and not 0.0 <= slo.threshold <= 1.0:
        problems.append(f"{path}.threshold: {slo.indicator!r} is a fraction between 0 and 1, got {slo.threshold}")
    elif ind.unit in (Unit.DURATION, Unit.GPU_HOURS) and slo.threshold < 0:
        problems.append(f"{path}.threshold: expected a non-negative value, got {slo.threshold}")
    if not 0.0 < slo.target <= 1.0:
        problems.append(f"{path}.target: expected a fraction in (0, 1], got {slo.target}")
    if slo.window <= timedelta(0):
        problems.append(f"{path}.window: expected a positive duration")
    return problems


def _scenario_fields(path: str, scenario: Scenario, sc: ScenarioConfig) -> list[str]:
    problems = []
    only = {
        "idle_limit": (Scenario.INTERACTIVE, sc.idle_limit),
        "lifecycle_limit": (Scenario.INTERACTIVE, sc.lifecycle_limit),
        "deadline": (Scenario.BATCH_INFERENCE, sc.deadline),
    }
    for name, (owner, value) in only.items():
        if value is None:
            continue
        if scenario is not owner:
            problems.append(f"{path}.{name}: only applies to scenario {owner.value!r}")
        elif value <= timedelta(0):
            problems.append(f"{path}.{name}: expected a positive duration")
    for i, name in enumerate(sc.reproducibility_fields):
        if name not in _TEXT_JOB_FIELDS:
            choices = ", ".join(sorted(_TEXT_JOB_FIELDS))
            problems.append(f"{path}.reproducibility_fields[{i}]: unknown job field {name!r} (one of {choices})")
    return problems


def _slos(config: Config) -> list[str]:
    problems = []
    for scenario, sc in config.scenarios.items():
        base = f"scenarios.{scenario.value}"
        seen: set[str] = set()
        for j, slo in enumerate(sc.slos):
            path = f"{base}.slos[{j}]"
            if slo.indicator in seen:
                problems.append(f"{path}.indicator: {slo.indicator!r} already has an objective in this scenario")
            seen.add(slo.indicator)
            problems.extend(_slo(path, scenario, slo))
        problems.extend(_scenario_fields(base, scenario, sc))
    return problems


def _alerts_and_lines(config: Config) -> list[str]:
    problems = []
    receiver_names = {r.name for r in config.alerts.receivers}
    for i, r in enumerate(config.alerts.receivers):
        if r.kind != "jsonl" and not (r.url or r.url_env):
            problems.append(f"alerts.receivers[{i}].url: a {r.kind} receiver needs a url (or url_env)")
        if r.kind == "jsonl" and not r.path:
            problems.append(f"alerts.receivers[{i}].path: a jsonl receiver needs a path")
    cluster_names = {c.name for c in config.clusters}
    for i, line in enumerate(config.protection.inference_reserve):
        path = f"protection.inference_reserve[{i}]"
        if line.cluster not in cluster_names:
            problems.append(f"{path}.cluster: unknown cluster {line.cluster!r}")
        if line.min_gpus < 0:
            problems.append(f"{path}.min_gpus: expected a non-negative number of GPUs, got {line.min_gpus}")
        problems.extend(
            f"{path}.receivers: unknown receiver {name!r}" for name in line.receivers if name not in receiver_names
        )
    return problems


def _reports_and_quota(config: Config) -> list[str]:
    problems = []
    if not _zone_ok(config.reports.timezone):
        problems.append(f"reports.timezone: unknown time zone {config.reports.timezone!r}")
    if not 0.0 < config.quota.max_step <= 1.0:
        problems.append(f"quota.max_step: expected a fraction in (0, 1], got {config.quota.max_step}")
    return problems


CHECKS: tuple[Callable[[Config], list[str]], ...] = (
    _clusters,
    _teams_and_rules,
    _slos,
    _alerts_and_lines,
    _reports_and_quota,
)


def check_semantics(config: Config) -> list[str]:
    return [problem for check in CHECKS for problem in check(config)]
