"""The Chinese review is Chinese: no English sentence outside names and identifiers.

`english_sentences` (tests/reports/english.py) finds runs of three or more English words; the
names a review may write in Latin letters (teams, clusters, queues, services from the config) and
identifiers (job ids, hosts, indicators, `key=value` pointers) do not count.

The footnotes are checked with the rest: the evaluators' evidence is data (codes and values,
gpusteward/evidence.py) written through the catalogues; so is the quota section (its reasons,
evidence and effects are catalogue messages stored in the plan, reports/plan_text.py).
"""

from __future__ import annotations

from reports import build_review
from reports.render import render_markdown
from tests.reports.english import english_sentences
from tests.reports.fixtures import demo_config, demo_outputs


def names_of(config: object) -> set[str]:
    """Names a review writes as they are: teams (keys and display names), accounts, clusters."""
    names: set[str] = set()
    for key, team in getattr(config, "teams", {}).items():
        names |= {key, team.display_name, *team.accounts}
    names |= {c.name for c in getattr(config, "clusters", [])}
    return {n for n in names if n}


def test_the_checker_finds_english_and_lets_names_and_identifiers_be() -> None:
    assert english_sentences("应对措施：Preempt or pause low-priority training on east-gpu-01/02") == [
        "Preempt or pause low-priority training on"]
    assert english_sentences("最长缺口：most missing: chat-70b on east-gpu-01:8001") == []  # two words only
    assert english_sentences("团队 Vision Speech Research 的用量", names=["Vision", "Speech", "Research"]) == []
    assert english_sentences("`gpusteward quota approve` 与 latency_p99 west/eval job=42") == []


def test_the_chinese_review_has_no_english_sentence() -> None:
    config = demo_config()
    review = build_review(demo_outputs(), config)
    zh = render_markdown(review, "zh")
    assert english_sentences(zh, names_of(config)) == []
    # the same check finds the English edition English, so it is not passing by accident
    assert len(english_sentences(render_markdown(review, "en"), names_of(config))) > 50


def test_a_fallback_written_in_chinese_is_the_one_the_chinese_review_shows() -> None:
    config = demo_config()
    zh = render_markdown(build_review(demo_outputs(), config), "zh")
    fallback = config.protection.inference_reserve[0].fallback
    assert fallback.get("zh") in zh
    assert fallback.get("en") not in zh
    assert fallback.get("en") in render_markdown(build_review(demo_outputs(), config), "en")
