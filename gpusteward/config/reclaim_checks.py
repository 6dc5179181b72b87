"""Cross-field checks of the reclaim policies: each problem names its key (`reclaim.policies[0].grace: ...`)."""

from __future__ import annotations

from datetime import timedelta
from fnmatch import fnmatchcase

from gpusteward.config.reclaim import ReclaimPolicy
from gpusteward.config.schema import Config
from gpusteward.domain import Scenario

_INFERENCE = Scenario.ONLINE_INFERENCE


def _policy(path: str, policy: ReclaimPolicy, config: Config) -> list[str]:
    problems: list[str] = []
    if not policy.name.strip():
        problems.append(f"{path}.name: expected a non-empty name")
    problems.extend(
        f"{path}.teams: unknown team {team!r}" for team in policy.teams if team not in config.teams
    )
    clusters = [c.name for c in config.clusters]
    if clusters and not any(fnmatchcase(name, policy.clusters) for name in clusters):
        problems.append(f"{path}.clusters: {policy.clusters!r} matches none of the clusters ({', '.join(clusters)})")
    if policy.idle_for <= timedelta(0):
        problems.append(f"{path}.idle_for: expected a positive duration")
    if policy.grace < timedelta(0):
        problems.append(f"{path}.grace: expected a duration of 0s or more")
    if policy.when == "no_traffic":
        if policy.scenario is not _INFERENCE:
            problems.append(f"{path}.when: no_traffic applies to scenario 'online_inference' only")
    else:
        if policy.scenario is _INFERENCE:
            problems.append(
                f"{path}.when: online_inference is judged by its traffic; use when = \"no_traffic\""
            )
        shortest = timedelta(minutes=config.idle.min_minutes)
        if policy.idle_for < shortest:
            problems.append(
                f"{path}.idle_for: {policy.when} needs at least idle.min_minutes ({config.idle.min_minutes}m):"
                " shorter idle runs are not idle"
            )
    if policy.action == "scale" and policy.when != "no_traffic":
        problems.append(f"{path}.action: scale applies to inference replicas (when = \"no_traffic\")")
    if policy.scale_to is not None:
        if policy.action != "scale":
            problems.append(f"{path}.scale_to: only applies to action \"scale\"")
        elif policy.scale_to < policy.min_replicas:
            problems.append(f"{path}.scale_to: {policy.scale_to} is below min_replicas ({policy.min_replicas})")
    if policy.min_replicas < 0:
        problems.append(f"{path}.min_replicas: expected 0 or more, got {policy.min_replicas}")
    return problems


def check_reclaim(config: Config) -> list[str]:
    """Every problem of `[reclaim]` and its policies, each with its key."""
    reclaim = config.reclaim
    problems: list[str] = []
    if reclaim.max_actions_per_hour < 0:
        problems.append(f"reclaim.max_actions_per_hour: expected 0 or more, got {reclaim.max_actions_per_hour}")
    names = [p.name for p in reclaim.policies]
    for i, policy in enumerate(reclaim.policies):
        path = f"reclaim.policies[{i}]"
        if names.count(policy.name) > 1:
            problems.append(f"{path}.name: duplicate policy {policy.name!r}")
        problems.extend(_policy(path, policy, config))
    known = {r.name for r in config.alerts.receivers}
    named = [("reclaim.receivers", r) for r in reclaim.receivers] + [
        (f"reclaim.team_receivers.{team}", r) for team, rs in reclaim.team_receivers.items() for r in rs
    ]
    problems.extend(f"{key}: no receiver {name!r} in [[alerts.receivers]]" for key, name in named if name not in known)
    for service, where in reclaim.deployments.items():
        if where.count("/") != 1 or not all(where.split("/")):
            problems.append(f"reclaim.deployments.{service}: expected namespace/name, got {where!r}")
    return problems
