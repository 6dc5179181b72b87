"""The follow-up of applied quota changes: the pure assessment and the review's `applied` section."""

from __future__ import annotations

import dataclasses
from datetime import datetime

import polars as pl
import pytest

from gpusteward.domain import Month
from reports import build_review, render_markdown
from reports.locale import LANGS, Lang
from sla.followup import assess, due
from tests.reports.fixtures import MONTH, demo_config, demo_outputs
from tests.reports.followup_fixtures import APPLIED_AT, BASELINE, baseline_outputs, lowered, raised
from tests.reports.golden import assert_golden


def _applied_section(markdown: str, title: str) -> str:
    start = markdown.index(f"## {title}")
    end = markdown.find("\n## ", start)
    return markdown[start : end + 1]


TITLES = {"en": "Whether last month's applied changes helped", "zh": "上月已执行的调整是否见效"}


def test_assessment_says_which_target_moved() -> None:
    found = assess(MONTH, demo_outputs().results, [raised(), lowered()], [baseline_outputs()])
    by_name = {a.change.name: a for a in found}
    assert set(by_name) == {"nlp", "vision"}  # east/train missed too, but nlp never waited there
    nlp, vision = by_name["nlp"], by_name["vision"]
    assert (nlp.subject, nlp.indicator, nlp.before, nlp.after, nlp.verdict) == (
        "west/eval", "queue_wait_p95", 36000.0, 19800.0, "moved")
    assert (vision.subject, vision.indicator, vision.before, vision.after, vision.verdict) == (
        "vision", "share_over_entitlement", 1.40, 1.62, "not_moved")
    assert nlp.baseline == BASELINE


def test_a_change_that_moved_too_little_did_not_move() -> None:
    base = baseline_outputs()
    value = pl.when(pl.col("value") == 36000.0).then(19900.0).otherwise(pl.col("value"))
    results = base.results.with_columns(value.alias("value"))
    found = assess(MONTH, demo_outputs().results, [raised()], [dataclasses.replace(base, results=results)])
    assert [a.verdict for a in found] == ["not_moved"]  # 19,900s -> 19,800s is within 5%


def test_only_changes_applied_in_the_month_before_are_due() -> None:
    earlier = dataclasses.replace(raised(), applied_at=datetime(2026, 9, 30, 23, 59))
    this_month = dataclasses.replace(raised(), applied_at=datetime(2026, 11, 1, 0, 0))
    unchanged = dataclasses.replace(raised(), after=16)
    assert due([earlier, this_month, unchanged, lowered()], MONTH) == [lowered()]


def test_missing_baseline_rollback_and_missing_target_are_not_judged() -> None:
    rolled = dataclasses.replace(raised(), rolled_back_at=datetime(2026, 11, 20))
    assert [(a.verdict, a.why) for a in assess(MONTH, demo_outputs().results, [rolled], [baseline_outputs()])] == [
        ("no_data", "rolled_back")]
    assert [(a.verdict, a.why) for a in assess(MONTH, demo_outputs().results, [raised()], [])] == [
        ("no_data", "no_baseline")]
    nowhere = dataclasses.replace(raised(), cluster="south")
    assert [(a.verdict, a.why) for a in assess(MONTH, demo_outputs().results, [nowhere], [baseline_outputs()])] == [
        ("no_data", "no_target")]
    gone = demo_outputs().results.filter(demo_outputs().results["subject"] != "vision")
    assert [(a.verdict, a.why) for a in assess(MONTH, gone, [lowered()], [baseline_outputs()])] == [
        ("no_data", "no_value")]


@pytest.mark.parametrize("lang", LANGS)
def test_applied_section_matches_golden(lang: Lang) -> None:
    review = build_review(demo_outputs(), demo_config(), [baseline_outputs()], [raised(), lowered()])
    assert review.section("applied").unavailable is None
    assert_golden(f"followup.{lang}.md", _applied_section(render_markdown(review, lang), TITLES[lang]))


def test_applied_section_says_nothing_applied_without_changes_due() -> None:
    late = dataclasses.replace(raised(), applied_at=datetime(2026, 11, 3))
    for applied in ([], [late]):
        review = build_review(demo_outputs(), demo_config(), [baseline_outputs()], applied)
        section = review.section("applied")
        assert section.unavailable is not None
        assert section.unavailable.key == "reason.nothing_applied"


def test_applied_at_is_read_in_utc_when_aware() -> None:
    from datetime import UTC, timedelta, timezone

    shanghai = timezone(timedelta(hours=8))
    # 1 November 07:00 in Shanghai is still 31 October in UTC: due in November's review.
    aware = dataclasses.replace(raised(), applied_at=datetime(2026, 11, 1, 7, 0, tzinfo=shanghai))
    assert due([aware], MONTH) == [aware]
    assert APPLIED_AT.tzinfo is None
    assert Month.of(APPLIED_AT.replace(tzinfo=UTC)) == Month(2026, 10)


def test_a_right_sizing_cut_is_housekeeping_with_nothing_to_move() -> None:
    reason = '[{"key":"quota.reason.rightsize","params":{"team":{"t":"vision"},"cluster":{"t":"east"}}}]'
    housekeeping = dataclasses.replace(lowered(), reason=reason)
    found = assess(MONTH, demo_outputs().results, [housekeeping], [baseline_outputs()])
    assert [(a.verdict, a.why) for a in found] == [("no_data", "no_target")]
