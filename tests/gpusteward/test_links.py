"""Dashboard links: a page and its filters as a URL under the configured base, none without it, and the
`[dashboard] url` key validated with its path."""

from __future__ import annotations

from datetime import date

import pytest

from gpusteward import links
from gpusteward.config import load_config_text
from gpusteward.errors import ConfigError

BASE = "https://gpus.example.org/steward/"


def test_no_base_no_link() -> None:
    assert links.team_jobs("2026-10", "research", "idle").url("") is None
    assert links.team_jobs("2026-10", "research", "idle").url("  ") is None


def test_page_and_filter_under_the_base() -> None:
    assert links.team_jobs("2026-10", "research", "idle").url(BASE) == (
        "https://gpus.example.org/steward/jobs?month=2026-10&team=research&focus=idle")
    assert links.queue("2026-10", "west/eval").url(BASE) == "https://gpus.example.org/steward/queues?month=2026-10&cluster=west"
    assert links.job("2026-10", "east", 20011).url(BASE) == "https://gpus.example.org/steward/job?month=2026-10&job=east%2F20011"
    assert links.team_jobs("2026-10", "a&b").url(BASE) == "https://gpus.example.org/steward/jobs?month=2026-10&team=a%26b"


@pytest.mark.parametrize(("line", "subject", "page", "params"), [
    ("inference_reserve", "east", "heatmap", {"month": "2026-10", "cluster": "east", "day": "2026-10-05"}),
    ("queue_wait", "west/eval", "queues", {"month": "2026-10", "cluster": "west"}),
    ("training_preemption", "east", "jobs", {"month": "2026-10", "cluster": "east", "focus": "preempted"}),
    ("inference_preemption", "east", "jobs", {"month": "2026-10", "cluster": "east", "focus": "preempted"}),
    ("interactive_limits", "west", "jobs", {"month": "2026-10", "cluster": "west", "scenario": "interactive",
                                            "focus": "idle"}),
    ("burn_rate", "chat-70b", "inference", {"month": "2026-10"}),
    ("a_line_of_a_plugin", "x", "overview", {"month": "2026-10"}),
])
def test_each_protection_line_opens_the_page_that_shows_it(line: str, subject: str, page: str,
                                                          params: dict[str, str]) -> None:
    target = links.for_line(line, subject, "2026-10", date(2026, 10, 5))
    assert (target.page, target.query()) == (page, params)


def test_repeated_parameters_are_lists_for_streamlit() -> None:
    target = links.Destination("queues", (("cluster", "east"), ("cluster", "west"), ("month", "2026-10")))
    assert target.query() == {"cluster": ["east", "west"], "month": "2026-10"}


def test_job_keys() -> None:
    assert links.parse_job_key("east/20011") == ("east", 20011)
    assert links.parse_job_key("20011") is None
    assert links.parse_job_key("east/12_3") is None


@pytest.mark.parametrize(("url", "problem"), [
    ("gpus.example.org", "expected an absolute http:// or https:// URL"),
    ("ftp://gpus.example.org", "expected an absolute http:// or https:// URL"),
    ("https://", "expected an absolute http:// or https:// URL"),
    ("https://gpus.example.org/?x=1", "without a query or fragment"),
])
def test_a_bad_dashboard_url_is_a_problem_with_its_path(url: str, problem: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config_text(f'[dashboard]\nurl = "{url}"\n', source="test.toml")
    assert [p for p in info.value.problems if p.startswith("dashboard.url: ") and problem in p], info.value.problems


def test_a_good_dashboard_url_loads() -> None:
    assert load_config_text('[dashboard]\nurl = "https://gpus.example.org/steward"\n').dashboard.url == (
        "https://gpus.example.org/steward")
    assert load_config_text("").dashboard.url == ""
