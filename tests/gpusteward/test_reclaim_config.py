"""`[reclaim]` in the config: safe defaults, and every bad policy named by its key."""

from __future__ import annotations

from datetime import timedelta

import pytest

from gpusteward.config import load_config_text
from gpusteward.config.reclaim import ReclaimConfig, ReclaimPolicy
from gpusteward.domain import Scenario
from gpusteward.errors import ConfigError
from tests.sla.reclaim_builders import POLICIES, reclaim_config

BASE = """
[teams.nlp]
entitled_share = 0.5
accounts = ["nlp"]
"""


def test_defaults_reclaim_nothing_until_told_to() -> None:
    assert ReclaimConfig() == ReclaimConfig(paused=False, max_actions_per_hour=5, policies=[])
    policy = ReclaimPolicy(name="p", scenario=Scenario.TRAINING, when="idle")
    assert (policy.mode, policy.action, policy.idle_for, policy.grace, policy.min_replicas) == (
        "shadow", "notify", timedelta(hours=1), timedelta(hours=1), 1)
    assert load_config_text(BASE).reclaim == ReclaimConfig()


def test_a_full_set_of_policies_loads() -> None:
    config = reclaim_config()
    assert [p.name for p in config.reclaim.policies] == ["notebooks", "training", "inference"]
    notebooks = config.reclaim.policies[0]
    assert (notebooks.when, notebooks.idle_for, notebooks.action, notebooks.mode) == (
        "idle_while_waiting", timedelta(hours=2), "cancel", "shadow")
    assert notebooks.exempt.accounts == ["vip*"]
    assert "notebooks" in POLICIES


def _policy(**fields: str) -> str:
    values = {"name": '"p"', "scenario": '"training"', "when": '"idle"', **fields}
    return BASE + "[[reclaim.policies]]\n" + "".join(f"{k} = {v}\n" for k, v in values.items())


@pytest.mark.parametrize(
    ("toml", "problem"),
    [
        (_policy(when='"no_traffic"'), "reclaim.policies[0].when: no_traffic applies to scenario 'online_inference'"),
        (_policy(scenario='"online_inference"'), "reclaim.policies[0].when: online_inference is judged by its traffic"),
        (_policy(idle_for='"10m"'), "reclaim.policies[0].idle_for: idle needs at least idle.min_minutes (30m)"),
        (_policy(action='"scale"'), "reclaim.policies[0].action: scale applies to inference replicas"),
        (_policy(action='"cancel"', scale_to="2"), 'reclaim.policies[0].scale_to: only applies to action "scale"'),
        (_policy(teams='["ghost"]'), "reclaim.policies[0].teams: unknown team 'ghost'"),
        ('[[clusters]]\nname = "east"\n' + _policy(clusters='"wset*"'),
         "reclaim.policies[0].clusters: 'wset*' matches none of the clusters (east)"),
        (_policy(mode='"yolo"'), "reclaim.policies[0].mode: expected one of 'shadow', 'approve', 'auto'"),
        (_policy(action='"kill"'), "reclaim.policies[0].action: expected one of 'notify', 'requeue'"),
        (_policy(exempt='{ acounts = ["x"] }'), "reclaim.policies[0].exempt.acounts: unknown field (did you mean"),
        (_policy(grace='"soon"'), "reclaim.policies[0].grace:"),
        (BASE + "[[reclaim.policies]]\nname = \"p\"\nscenario = \"training\"\n",
         "reclaim.policies[0].when: required field is missing"),
        (BASE + "[reclaim]\nmax_actions_per_hour = -1\n", "reclaim.max_actions_per_hour: expected 0 or more, got -1"),
        (BASE + "[reclaim]\npaused = \"yes\"\n", "reclaim.paused: expected true or false"),
        (_policy() + "[[reclaim.policies]]\nname = \"p\"\nscenario = \"training\"\nwhen = \"idle\"\n",
         "reclaim.policies[1].name: duplicate policy 'p'"),
        (BASE + "[[reclaim.policies]]\nname = \"i\"\nscenario = \"online_inference\"\nwhen = \"no_traffic\"\n"
         "action = \"scale\"\nscale_to = 1\nmin_replicas = 2\n",
         "reclaim.policies[0].scale_to: 1 is below min_replicas (2)"),
    ],
)
def test_a_bad_policy_is_named_by_its_key(toml: str, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        load_config_text(toml, source="<test>")
    assert any(p.startswith(problem) for p in caught.value.problems), caught.value.problems
