"""Sections whose data is missing say "not available" and why; nothing crashes."""

from __future__ import annotations

from dataclasses import replace

import polars as pl
import pytest

from gpusteward.config.schema import ProtectionConfig
from reports import build_review, render_markdown
from reports.build import SECTIONS
from reports.locale import LANGS, Lang
from tests.reports.fixtures import demo_config, demo_outputs, empty_outputs, with_frames


@pytest.mark.parametrize("lang", LANGS)
def test_an_empty_month_renders_every_section(lang: Lang) -> None:
    review = build_review(empty_outputs(), demo_config())
    text = render_markdown(review, lang)
    unavailable = ("task_mix", "sla", "trend", "queues", "latency", "idle", "showback", "preemption", "breaches",
                   "failures", "applied", "completeness")
    for key in unavailable:
        assert review.section(key).unavailable is not None, key
    assert review.section("quota").unavailable is None  # no plan items: no changes recommended
    marker = {"en": "_Not available: ", "zh": "_暂无："}[lang]
    assert text.count(marker) == len(unavailable)
    assert {"en": "No changes recommended.", "zh": "无调整建议。"}[lang] in text
    assert len(review.sections) == len(SECTIONS)


def test_the_reason_names_the_empty_source() -> None:
    review = build_review(with_frames(demo_outputs(), usage=pl.DataFrame()), demo_config())
    text = render_markdown(review, "en")
    assert "_Not available: Usage lacks the columns cluster, scenario, team, gpu_hours, jobs._" in text
    assert "finding.unavailable_missing_columns" in [f.message.key for f in review.findings]


def test_missing_columns_make_a_section_unavailable_and_leave_the_others() -> None:
    outputs = demo_outputs()
    review = build_review(with_frames(outputs, idle=outputs.idle.drop("idle_held_minutes")), demo_config())
    reason = review.section("idle").unavailable
    assert reason is not None
    assert reason.key == "reason.missing_columns"
    assert review.section("sla").unavailable is None
    idle_finding = next(f for f in review.findings if f.message.key.startswith("finding.idle"))
    assert idle_finding.message.key == "finding.idle_short"
    assert "idle_held_minutes" in render_markdown(review, "zh")


def test_results_without_queues_or_services_say_so() -> None:
    outputs = demo_outputs()
    only_teams = outputs.results.filter(outputs.results["subject_kind"] == "team")
    review = build_review(with_frames(outputs, results=only_teams), demo_config())
    text = render_markdown(review, "en")
    assert "SLA results hold no queue-wait results" in text
    assert "SLA results hold no latency or error-rate results" in text


def test_nulls_everywhere_render_as_no_data() -> None:
    outputs = demo_outputs()
    nulls = outputs.usage.with_columns(gpu_hours=None, jobs=None)
    text = render_markdown(build_review(with_frames(outputs, usage=nulls), demo_config()), "en")
    assert "| Training | no data | no data | no data |" in text
    assert "Jobs held no data in no data job records" in text


def test_no_episodes_means_no_breach_only_when_telemetry_was_accounted_for() -> None:
    outputs = demo_outputs()
    quiet = with_frames(outputs, episodes=outputs.episodes.clear())
    assert "No protection line was breached" in render_markdown(build_review(quiet, demo_config()), "en")
    blind = with_frames(quiet, completeness=outputs.completeness.clear())
    assert "breaches can be neither found nor ruled out" in render_markdown(build_review(blind, demo_config()), "en")
    unconfigured = replace(demo_config(), protection=ProtectionConfig())
    assert "No protection lines are configured" in render_markdown(build_review(quiet, unconfigured), "en")


def test_building_is_pure_and_repeatable() -> None:
    outputs, config = demo_outputs(), demo_config()
    assert build_review(outputs, config) == build_review(outputs, config)
    assert outputs.results.equals(demo_outputs().results)
