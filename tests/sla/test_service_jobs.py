"""Inference services tied to jobs by the configured `[[inference.service_jobs]]` rules."""

from __future__ import annotations

import re
from typing import Any

import pytest

from gpusteward.config import load_config_text
from gpusteward.config.inference import ServiceJobRule
from gpusteward.errors import ConfigError
from sla.service_jobs import ServiceMatcher

SERVICES = ["chat", "chat-70b", "org/embed"]


def job(**fields: Any) -> dict[str, Any]:
    return {"cluster": "east", "partition": "infer", "account": "platform", "qos": "normal", "name": "",
            "comment": None, **fields}


def test_no_rule_ties_no_job() -> None:
    assert ServiceMatcher([], SERVICES).service_of(job(name="vllm-chat-70b-0")) is None


def test_the_service_named_in_the_job_is_the_longest_whole_word() -> None:
    matcher = ServiceMatcher([ServiceJobRule(name_has_service=True)], SERVICES)
    assert matcher.service_of(job(name="vllm-chat-70b-0")) == "chat-70b"
    assert matcher.service_of(job(name="vllm-chat-1")) == "chat"
    assert matcher.service_of(job(comment="vllm serve embed --port 8001")) == "org/embed"  # the part after "/"
    assert matcher.service_of(job(name="chatter")) is None


def test_a_job_name_pattern_captures_the_service() -> None:
    matcher = ServiceMatcher([ServiceJobRule(job_name=r"^serve-(?P<service>[a-z0-9-]+?)-r\d+$")], SERVICES)
    assert matcher.service_of(job(name="serve-chat-70b-r3")) == "chat-70b"
    assert matcher.service_of(job(name="train-chat-70b")) is None


def test_rules_by_partition_account_or_labels_name_a_fixed_service_first_match_wins() -> None:
    rules = [
        ServiceJobRule(service="embed-batch", partition="batch*"),
        ServiceJobRule(service="chat", account="chat-team"),
        ServiceJobRule(service="chat-70b", namespace="serving", labels={"app": "chat-*"}),
        ServiceJobRule(name_has_service=True),
    ]
    matcher = ServiceMatcher(rules, SERVICES)
    assert matcher.service_of(job(partition="batch-a", name="vllm-chat-0")) == "embed-batch"
    assert matcher.service_of(job(account="chat-team", name="whatever")) == "chat"
    # Slurm records carry no namespace or labels: that rule never matches them, the next one does
    assert matcher.service_of(job(name="vllm-chat-70b-1")) == "chat-70b"
    assert matcher.service_of(job(name="x", namespace="serving", labels={"app": "chat-large"})) == "chat-70b"


def test_the_config_checks_the_rules() -> None:
    base = 'apiVersion = "gpusteward/v1"\n'
    config = load_config_text(base + '[[inference.service_jobs]]\njob_name = "^vllm-"\nname_has_service = true\n')
    assert config.inference.service_jobs[0].name_has_service
    for bad, words in (('job_name = "("', "job_name: not a regular expression"),
                       ('partition = "infer"', "names no service")):
        with pytest.raises(ConfigError, match=re.escape(words)):
            load_config_text(base + "[[inference.service_jobs]]\n" + bad + "\n")
