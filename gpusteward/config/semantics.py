"""Checks across fields: references resolve, shares add up, indicators fit their scenario."""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from datetime import timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from gpusteward import cron, links
from gpusteward.config.inference import SELECTOR_ROLES, parse_selector
from gpusteward.config.reclaim_checks import check_reclaim
from gpusteward.config.schema import Config, ScenarioConfig, SloConfig
from gpusteward.config.showback_checks import check_showback
from gpusteward.domain import Scenario
from gpusteward.indicators import INDICATORS, Judgement, Unit
from gpusteward.slo_window import parse_window
from gpusteward.tables import JOBS

_TEXT_JOB_FIELDS = frozenset(name for name, dtype in JOBS.items() if dtype == pl.Utf8)
_MULTIPLES = frozenset({"share_over_entitlement"})
_METRIC_NAME = re.compile(r"[A-Za-z_:][A-Za-z0-9_:]*")


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


def _shared_gpus(config: Config) -> list[str]:
    problems = []
    for i, s in enumerate(config.capacity.shared):
        if s.replicas < 2:
            problems.append(f"capacity.shared[{i}].replicas: {s.replicas}; a shared GPU has 2 or more replicas")
        if not s.hosts.strip():
            problems.append(f"capacity.shared[{i}].hosts: empty; name the shared nodes (a glob such as nb-*)")
    return problems


def _teams_and_rules(config: Config) -> list[str]:
    problems = []
    for name, team in config.teams.items():
        if not 0.0 <= team.entitled_share <= 1.0:
            problems.append(
                f"teams.{name}.entitled_share: expected a fraction between 0 and 1, got {team.entitled_share}"
            )
        for cluster, share in team.cluster_shares.items():
            if not 0.0 <= share <= 1.0:
                problems.append(
                    f"teams.{name}.cluster_shares.{cluster}: expected a fraction between 0 and 1, got {share}"
                )
    total = sum(t.entitled_share for t in config.teams.values())
    for cluster in sorted({c for t in config.teams.values() for c in t.cluster_shares}):
        on_cluster = sum(t.cluster_shares.get(cluster, t.entitled_share) for t in config.teams.values())
        if on_cluster > 1.0 + 1e-9:
            problems.append(f"teams: entitled shares of cluster {cluster} add up to {on_cluster:.2f}, more than 1.0")
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
    if slo.target is not None:
        if not 0.0 < slo.target <= 1.0:
            problems.append(f"{path}.target: expected a fraction in (0, 1], got {slo.target}")
        elif ind is not None and ind.judgement is not Judgement.EVENTS:
            problems.append(
                f"{path}.target: {slo.indicator!r} is judged by its threshold alone"
                f" ({'the threshold is the share required' if ind.judgement is Judgement.SHARE else 'a level'});"
                " target applies to percentile indicators (queue_wait_p95, latency_p99, ...)"
            )
    try:
        rolling = parse_window(slo.window)
    except ValueError as err:
        problems.append(f"{path}.window: {err}")
    else:
        if rolling is not None and ind is not None and ind.digest:
            problems.append(
                f"{path}.window: {slo.indicator!r} comes from the month's GPU-minute digest and is judged over"
                ' the calendar month only; use window = "month"'
            )
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
    return problems + _protection_lines(config, cluster_names, receiver_names)


def _protection_lines(config: Config, clusters: set[str], receivers: set[str]) -> list[str]:
    """Peak windows parse, lines name known clusters, peak windows and receivers."""
    prot = config.protection
    problems: list[str] = []
    peaks = {p.name for p in prot.peak_windows}
    for i, peak in enumerate(prot.peak_windows):
        path = f"protection.peak_windows[{i}]"
        if not _zone_ok(peak.timezone):
            problems.append(f"{path}.timezone: unknown time zone {peak.timezone!r}")
        cron_problem = None if peak.cron is None else cron.check(peak.cron)
        if cron_problem:
            problems.append(f"{path}.cron: {cron_problem}")
        if peak.cron is None and not re.fullmatch(r"\d\d?:\d\d-\d\d?:\d\d", peak.hours):
            problems.append(f"{path}.hours: expected HH:MM-HH:MM, got {peak.hours!r}")
    kinds: list[tuple[str, list[Any]]] = [
        ("inference_reserve", list(prot.inference_reserve)), ("training_preemption", list(prot.training_preemption)),
        ("inference_preemption", list(prot.inference_preemption)), ("queue_wait", list(prot.queue_wait)),
        ("interactive_limits", list(prot.interactive_limits)), ("burn_rate", list(prot.burn_rate)),
    ]
    for kind, lines in kinds:
        for i, line in enumerate(lines):
            path = f"protection.{kind}[{i}]"
            checked = kind not in {"inference_reserve", "interactive_limits"} and hasattr(line, "cluster")
            if checked and line.cluster not in clusters:
                problems.append(f"{path}.cluster: unknown cluster {line.cluster!r}")
            named = getattr(line, "peak", None)
            if named is not None and named not in peaks:
                problems.append(f"{path}.peak: unknown peak window {named!r}")
            if kind != "inference_reserve":
                unknown = [n for n in line.receivers if n not in receivers]
                problems.extend(f"{path}.receivers: unknown receiver {n!r}" for n in unknown)
    for i, br in enumerate(prot.burn_rate):
        if br.indicator == "latency" and br.threshold is None:
            problems.append(f"protection.burn_rate[{i}].threshold: a latency burn-rate line needs a threshold")
        if not 0.0 < br.target < 1.0:
            problems.append(f"protection.burn_rate[{i}].target: expected a share in (0, 1), got {br.target}")
    return problems


def _reports_and_quota(config: Config) -> list[str]:
    problems = []
    if not _zone_ok(config.timezone):
        problems.append(f"timezone: unknown time zone {config.timezone!r}")
    if config.reports.timezone and not _zone_ok(config.reports.timezone):
        problems.append(f"reports.timezone: unknown time zone {config.reports.timezone!r}")
    schedule_problem = cron.check(config.reports.schedule)
    if schedule_problem:
        problems.append(f"reports.schedule: {schedule_problem}")
    if not 0.0 < config.quota.max_step <= 1.0:
        problems.append(f"quota.max_step: expected a fraction in (0, 1], got {config.quota.max_step}")
    if not config.quota.max_oversubscription > 0.0:
        problems.append(
            f"quota.max_oversubscription: expected a positive multiple of the guaranteed GPUs (1.0: none beyond"
            f" today's), got {config.quota.max_oversubscription}")
    return problems


def _inference_mappings(config: Config) -> list[str]:
    """Mapping servers are unique, name a service and a signal, and their selectors parse."""
    problems = []
    servers = [m.server for m in config.inference.mappings]
    for i, m in enumerate(config.inference.mappings):
        path = f"inference.mappings[{i}]"
        if not m.server.strip():
            problems.append(f"{path}.server: expected a non-empty name")
        elif servers.count(m.server) > 1:
            problems.append(f"{path}.server: duplicate mapping for server {m.server!r}")
        if not m.service_labels and not m.default_service:
            problems.append(f"{path}.service_labels: name at least one service label, or set default_service")
        if not (m.e2e or m.ttft or m.requests):
            problems.append(f"{path}: maps no latency histogram (e2e, ttft) and no requests counter")
        if not m.latency_scale > 0:
            problems.append(f"{path}.latency_scale: expected a positive number, got {m.latency_scale}")
        for role in SELECTOR_ROLES:
            for j, text in enumerate(getattr(m, role)):
                try:
                    parse_selector(text)
                except ValueError as exc:
                    problems.append(f"{path}.{role}[{j}]: {exc}")
        for role in ("e2e", "ttft", "running", "waiting", "kv_cache"):
            for j, name in enumerate(getattr(m, role)):
                if not _METRIC_NAME.fullmatch(name):
                    problems.append(f"{path}.{role}[{j}]: {name!r} is not a metric name")
    return problems


def _service_jobs(config: Config) -> list[str]:
    """Each service_jobs rule's pattern compiles, and the rule says which service a matched job serves."""
    problems = []
    for i, rule in enumerate(config.inference.service_jobs):
        path = f"inference.service_jobs[{i}]"
        captures = False
        if rule.job_name is not None:
            try:
                captures = "service" in re.compile(rule.job_name).groupindex
            except re.error as exc:
                problems.append(f"{path}.job_name: not a regular expression: {exc}")
        if rule.service is None and not captures and not rule.name_has_service:
            problems.append(
                f"{path}: names no service: set service, capture (?P<service>...) in job_name, or name_has_service"
            )
    return problems


def _limits(config: Config) -> list[str]:
    """Every bound is positive: a zero or negative limit would refuse every input."""
    problems = []
    for name, value in vars(config.limits).items():
        if not value > type(value)(0):
            problems.append(f"limits.{name}: expected a positive value, got {value}")
    if config.limits.max_compression_ratio < 1:
        problems.append("limits.max_compression_ratio: expected at least 1 (gzip never shrinks text below it)")
    return problems


_HEADER_NAME = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]+")  # an HTTP field name (RFC 9110 token)


def _proxy_identity(config: Config) -> list[str]:
    """The proxy's headers are header names, its trusted addresses parse, and each role names someone."""
    proxy, path = config.service.proxy, "service.proxy"
    problems = [
        f"{path}.{name}: {value!r} is not an HTTP header name"
        for name, value in (("user_header", proxy.user_header), ("groups_header", proxy.groups_header))
        if value and not _HEADER_NAME.fullmatch(value)
    ]
    if proxy.groups_header and not proxy.user_header:
        problems.append(f"{path}.groups_header: set user_header too (groups alone name nobody)")
    for i, network in enumerate(proxy.trusted_proxies):
        try:
            ipaddress.ip_network(network, strict=False)
        except ValueError:
            problems.append(f"{path}.trusted_proxies[{i}]: {network!r} is not an IP address or network (CIDR)")
    for name in proxy.roles:
        if not name.removeprefix("group:").strip():
            problems.append(f"{path}.roles: {name!r} names no user or group")
    if proxy.user_header and not proxy.roles:
        problems.append(f"{path}.roles: give at least one user or group a role, or every proxy user is refused")
    return problems


def _dashboard(config: Config) -> list[str]:
    """The dashboard's URL, when set, is an absolute http(s) address: links are written from it as they are."""
    problem = links.base_url_problem(config.dashboard.url)
    return [f"dashboard.url: {problem}"] if problem else []


def _live_sources(config: Config) -> list[str]:
    """Live sources are told apart by name (the job `collect:<name>`, their metrics' `source` label)."""
    sc = config.service
    named = [
        *((f"service.scrape[{i}].name", s.name) for i, s in enumerate(sc.scrape)),
        *((f"service.slurm[{i}].name", s.name) for i, s in enumerate(sc.slurm)),
        *((f"service.kube_queues[{i}].name", s.name) for i, s in enumerate(sc.kube_queues)),
    ]
    names = [name for _, name in named]
    problems = [f"{path}: duplicate live source {name!r}" for path, name in named if names.count(name) > 1]
    for i, s in enumerate(sc.kube_queues):
        if s.scheduler != "kueue" and (s.jobs or s.team_label):
            problems.append(
                f"service.kube_queues[{i}].jobs: the job feed reads Kueue Workloads; {s.scheduler} has none"
            )
    return problems


CHECKS: tuple[Callable[[Config], list[str]], ...] = (
    _clusters,
    _teams_and_rules,
    _slos,
    _alerts_and_lines,
    _reports_and_quota,
    _inference_mappings,
    _service_jobs,
    _limits,
    _proxy_identity,
    check_reclaim,
    _dashboard,
    _shared_gpus,
    _live_sources,
    check_showback,
)


def check_semantics(config: Config) -> list[str]:
    return [problem for check in CHECKS for problem in check(config)]
