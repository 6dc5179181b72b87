"""Map jobs to a scenario and a team with the configured rules (first match wins)."""

from __future__ import annotations

from fnmatch import fnmatchcase

import polars as pl

from gpusteward.config.schema import Config, RuleConfig
from gpusteward.domain import UNATTRIBUTED, Scenario

_MATCH_FIELDS = ("cluster", "partition", "qos", "account")


def _rule_matches(rule: RuleConfig, row: dict[str, str | None]) -> bool:
    for name in _MATCH_FIELDS:
        pattern = getattr(rule.match, name)
        if pattern is not None and not fnmatchcase(row.get(name) or "", pattern):
            return False
    # Slurm records carry no namespace or labels: rules that need them never match a Slurm job.
    return rule.match.namespace is None and not rule.match.labels


def team_of_account(config: Config, account: str | None) -> str:
    if account is None:
        return UNATTRIBUTED
    for name, team in config.teams.items():
        if account in team.accounts or account == name:
            return name
    return UNATTRIBUTED


def classify(config: Config, row: dict[str, str | None]) -> tuple[str, str]:
    """(scenario, team) of one job given its cluster, partition, qos and account."""
    for rule in config.rules:
        if _rule_matches(rule, row):
            team = rule.team if rule.team is not None else team_of_account(config, row.get("account"))
            return rule.scenario.value, team
    return UNATTRIBUTED, team_of_account(config, row.get("account"))


def classify_jobs(config: Config, jobs: pl.DataFrame) -> pl.DataFrame:
    """`jobs` (JOBS schema or a subset with the match columns) plus `scenario` and `team` columns.

    Rules are evaluated once per distinct (cluster, partition, qos, account), not per row.
    """
    keys = jobs.select(_MATCH_FIELDS).unique()
    scenarios: list[str] = []
    teams: list[str] = []
    for row in keys.iter_rows(named=True):
        scenario, team = classify(config, row)
        scenarios.append(scenario)
        teams.append(team)
    mapping = keys.with_columns(
        pl.Series("scenario", scenarios, dtype=pl.Utf8), pl.Series("team", teams, dtype=pl.Utf8)
    )
    return jobs.join(mapping, on=list(_MATCH_FIELDS), how="left", nulls_equal=True)


SCENARIOS = [s.value for s in Scenario]
