"""A first config for a pool, written by `gpusteward init`: every section commented, every guess marked.

`render_starter(pool)` turns what is known about the pool (from a live Slurm, or placeholders for
the template) into TOML that `load_config` accepts as it is. What cannot be known from the scheduler
(which scenario a partition serves, each team's entitled share) is written as a marked guess.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from gpusteward.domain import Scenario

SCENARIO_HINTS: tuple[tuple[str, Scenario], ...] = (
    ("infer|serv|online", Scenario("online_inference")),
    ("batch|offline", Scenario("batch_inference")),
    ("interactive|notebook|jupyter|debug|dev", Scenario("interactive")),
    ("finetun|fine-tun|sft|lora", Scenario("fine_tuning")),
    ("eval|bench", Scenario("evaluation")),
    ("train|pretrain", Scenario("training")),
)
"""Partition-name fragments and the scenario they usually mean; anything else is general_compute."""


def guess_scenario(partition: str) -> Scenario:
    for pattern, scenario in SCENARIO_HINTS:
        if re.search(pattern, partition, re.IGNORECASE):
            return scenario
    return Scenario("general_compute")


@dataclass(frozen=True)
class StarterPartition:
    name: str
    gpus: int | None = None


@dataclass(frozen=True)
class StarterPool:
    cluster: str
    timezone: str = "UTC"
    gpus: int = 0
    accounts: dict[str, str] = field(default_factory=dict)
    """Scheduler account -> its description; each becomes a team of the same name."""
    partitions: tuple[StarterPartition, ...] = ()
    source: str = "template"


TEMPLATE_POOL = StarterPool(
    cluster="my-cluster",
    accounts={"team-a": "", "team-b": ""},
    partitions=(StarterPartition("train"), StarterPartition("inference"), StarterPartition("interactive")),
)
"""Placeholders for `gpusteward init` without a scheduler to read: replace the names with yours."""


def _q(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _key(name: str) -> str:
    return name if re.fullmatch(r"[A-Za-z0-9_-]+", name) else _q(name)


def render_starter(pool: StarterPool) -> str:
    """The config file's text for `pool`."""
    teams = sorted(pool.accounts) or ["team-a"]
    share = round(1.0 / len(teams), 4)
    lines = [
        f"# GPU Steward config for cluster {pool.cluster}, written by `gpusteward init` from {pool.source}.",
        "# Every field and its default: docs/config.md. Check it with `gpusteward validate-config FILE`.",
        "# Lines marked GUESS are what the scheduler could not tell: check them before the first review.",
        'apiVersion = "gpusteward/v1"',
        "",
        "[warehouse]",
        "# DuckDB file, relative to this file.",
        'path = "gpusteward.duckdb"',
        "",
        "[[clusters]]",
        f"name = {_q(pool.cluster)}",
        "# The pool's business hours, days and months are counted in this zone.",
        f"timezone = {_q(pool.timezone)}",
        "# 0: count the GPUs seen in telemetry." if not pool.gpus else "# GPUs configured on the cluster's nodes.",
        f"gpus = {pool.gpus}",
        "",
        "# One team per scheduler account. GUESS: equal entitled shares; set each team's real share (0..1).",
    ]
    for team in teams:
        description = pool.accounts.get(team, "")
        lines += [f"[teams.{_key(team)}]", f"entitled_share = {share}", f"accounts = [{_q(team)}]"]
        if description:
            lines.append(f"display_name = {_q(description)}")
        lines.append("")
    lines += [
        "# Work is mapped to a scenario by the first rule that matches (partition, qos, account, namespace,",
        "# labels). Scenarios: training, fine_tuning, evaluation, online_inference, batch_inference,",
        "# interactive, general_compute.",
    ]
    for part in pool.partitions:
        scenario = guess_scenario(part.name)
        gpus = f" ({part.gpus} GPUs)" if part.gpus else ""
        lines += [
            f"# partition {part.name}{gpus}. GUESS from its name: {scenario}",
            "[[rules]]",
            f'scenario = "{scenario.value}"',
            f"match = {{ cluster = {_q(pool.cluster)}, partition = {_q(part.name)} }}",
            "",
        ]
    lines += [
        "# Anything no rule above matched.",
        "[[rules]]",
        'scenario = "general_compute"',
        "",
        "# Objectives: each scenario gets the built-in ones (docs/evaluation.md#defaults); add your own, e.g.",
        "# [[scenarios.training.slos]]",
        '# indicator = "queue_wait_p95"',
        '# threshold = "2h"',
        "",
        "# Protection lines (docs/config.md#protection): none until you choose them, e.g.",
        "# [[protection.queue_wait]]",
        f'# queue = "{pool.cluster}/*"',
        '# max_wait = "24h"',
        "",
        "# Where alerts go: webhook, jsonl, alertmanager, slack, feishu, dingtalk, wecom.",
        "# [[alerts.receivers]]",
        '# name = "platform"',
        '# kind = "alertmanager"',
        '# url = "http://alertmanager:9093"',
        "",
        "# Reclaim policies (docs/reclaim.md): none until you choose them; each starts in shadow mode, which",
        "# only records what it would do. `gpusteward reclaim plan` shows what that is now, e.g.",
        "# [[reclaim.policies]]",
        '# name = "idle-notebooks"',
        '# scenario = "interactive"',
        '# when = "idle_while_waiting"',
        '# idle_for = "2h"',
        '# action = "cancel"',
        "",
        "[reports]",
        "# Cron schedule of the monthly review (minute hour day-of-month month day-of-week), in the zone below.",
        'schedule = "0 8 1 * *"',
        f"timezone = {_q(pool.timezone)}",
        'languages = ["en", "zh"]',
        'formats = ["md", "html"]',
        'out_dir = "reports"',
        "",
    ]
    return "\n".join(lines)
