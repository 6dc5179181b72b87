"""A reader of the summary alone can name every problem the month holds."""

from __future__ import annotations

import pytest

from reports import Review, build_review, render_markdown
from reports.locale import LANGS, Lang
from reports.model import SEVERITY_ORDER
from tests.reports.fixtures import demo_config, demo_outputs, with_frames


def summary_text(review: Review, lang: Lang) -> str:
    text = render_markdown(review, lang)
    start = text.index("\n## ")
    end = text.index("\n## ", start + 1)
    return text[start:end]


@pytest.mark.parametrize("lang", LANGS)
def test_summary_names_every_planted_problem(review: Review, lang: Lang) -> None:
    summary = summary_text(review, lang)
    expected = {
        "en": ["**west/eval**", "is starving", "**chat-70b**", "latency p99", "**Vision**", "entitled share",
               "**Research**", "notebooks", "Inference reserve on **east**", "GPU telemetry", "**west**"],
        "zh": ["**west/eval**", "积压", "**chat-70b**", "延迟 p99", "**Vision**", "应得份额",
               "**Research**", "notebook", "**east** 的「推理保留容量」", "GPU 遥测", "**west**"],
    }[lang]
    for needle in expected:
        assert needle in summary, needle


def test_findings_are_ordered_by_severity(review: Review) -> None:
    ranks = [SEVERITY_ORDER.index(f.severity) for f in review.findings]
    assert ranks == sorted(ranks)
    assert review.findings[0].severity == "critical"
    keys = [f.message.key for f in review.findings]
    assert keys[:4] == ["finding.breach_floor", "finding.service", "finding.queue_wait", "finding.idle"]


def test_every_finding_points_to_its_evidence(review: Review) -> None:
    numbers = {n.number for n in review.footnotes}
    for finding in review.findings:
        assert finding.message.note in numbers, finding.message.key


def test_a_team_over_share_without_an_objective_is_still_flagged() -> None:
    outputs = demo_outputs()
    results = outputs.results.with_columns(
        objective=None, met=None
    ).filter(outputs.results["indicator"] == "share_over_entitlement")
    review = build_review(with_frames(outputs, results=results), demo_config())
    shares = [f for f in review.findings if f.message.key == "finding.share"]
    assert len(shares) == 1
    assert ("subject", "Vision") in [(k, getattr(v, "value", None)) for k, v in shares[0].message.params]


def test_a_quiet_month_says_nothing_needs_a_decision() -> None:
    outputs = demo_outputs()
    results = outputs.results.filter(outputs.results["met"].eq(True))
    quiet = with_frames(
        outputs,
        results=results,
        episodes=outputs.episodes.clear(),
        plan_items=outputs.plan_items.clear(),
        completeness=outputs.completeness.filter(outputs.completeness["missing"] == 0),
    )
    review = build_review(quiet, demo_config())
    assert review.findings == ()
    assert "Nothing needs a decision this month" in render_markdown(review, "en")
    assert "本月没有需要决策的事项" in render_markdown(review, "zh")
