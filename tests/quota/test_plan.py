"""Plans as data: round trips, and the text the CLI prints."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import polars as pl
import pytest

from quota.plan import DRY_RUN_NOTE, Plan, PlanItem, render_text
from reports.plan_text import _width
from sla.results import QUOTA_PLAN_ITEMS

CREATED = datetime(2026, 4, 1, 8, 0, tzinfo=UTC)
ITEMS = pl.DataFrame([
    {"plan_id": "q-2026-03", "cluster": "east", "kind": "account", "name": "nlp", "team": "nlp", "current_gpus": 12,
     "proposed_gpus": 10, "reason": "Lower nlp's GPU quota on east.", "evidence": "share 1.60 against 1.25",
     "expected_effect": "Frees up to 2 GPUs on east."},
    {"plan_id": "q-2026-03", "cluster": "east", "kind": "account", "name": "vision", "team": "vision",
     "current_gpus": 4, "proposed_gpus": 5, "reason": "Raise vision's GPU quota on east.", "evidence": "wait 2h",
     "expected_effect": "Up to 1 more GPU."},
    {"plan_id": "other", "cluster": "west", "kind": "account", "name": "x", "team": "x", "current_gpus": 1,
     "proposed_gpus": 2, "reason": "", "evidence": "", "expected_effect": ""},
], schema=QUOTA_PLAN_ITEMS, orient="row")


def test_plan_from_frame_is_a_proposed_dry_run() -> None:
    plan = Plan.from_frame("q-2026-03", "2026-03", CREATED, ITEMS)
    assert (plan.status, plan.dry_run, len(plan.items)) == ("proposed", True, 2)
    assert plan.items[0].change == -2
    assert plan.to_frame().equals(ITEMS.filter(pl.col("plan_id") == "q-2026-03"))


def test_json_round_trip() -> None:
    plan = Plan.from_frame("q-2026-03", "2026-03", CREATED, ITEMS)
    data = json.loads(plan.to_json())
    assert data["dry_run"] is True
    assert data["note"] == DRY_RUN_NOTE
    assert data["created_at"] == "2026-04-01T08:00:00Z"
    assert Plan.from_dict(data) == plan


def test_only_proposed_dry_runs_are_read() -> None:
    data = Plan.from_frame("q-2026-03", "2026-03", CREATED, ITEMS).to_dict()
    with pytest.raises(ValueError, match="dry-run"):
        Plan.from_dict({**data, "dry_run": False})


def test_render_text() -> None:
    text = render_text(Plan.from_frame("q-2026-03", "2026-03", CREATED, ITEMS))
    assert text == (
        "Quota plan q-2026-03 for 2026-03 (proposed), created 2026-04-01T08:00:00Z\n"
        f"{DRY_RUN_NOTE}\n"
        "\n"
        "#  Cluster  Kind     Name    Team    Current  Proposed  Change\n"
        "1  east     account  nlp     nlp          12        10      -2\n"
        "2  east     account  vision  vision        4         5      +1\n"
        "\n"
        "1. Lower nlp's GPU quota on east.\n"
        "   evidence: share 1.60 against 1.25\n"
        "   expected effect: Frees up to 2 GPUs on east.\n"
        "2. Raise vision's GPU quota on east.\n"
        "   evidence: wait 2h\n"
        "   expected effect: Up to 1 more GPU.\n"
    )


def test_render_empty_plan() -> None:
    plan = Plan("q", "2026-03", CREATED, ())
    assert render_text(plan).endswith("No quota changes recommended.\n")
    assert PlanItem("c", "account", "n", "t", None, 3, "", "", "").change is None


def _said(key: str, **params: object) -> str:
    return json.dumps([{"key": key, "params": {k: ({"q": v, "kind": "gpus"} if isinstance(v, int) else {"t": v})
                                               for k, v in params.items()}}])


def test_catalogue_texts_are_written_in_the_asked_language_with_the_replay_and_advice_apart() -> None:
    items = pl.DataFrame([
        {"plan_id": "q", "cluster": "east", "kind": "account", "name": "vision", "team": "vision",
         "current_gpus": 28, "proposed_gpus": 21, "reason": _said("quota.reason.rightsize", team="vision",
                                                                  cluster="east"),
         "evidence": _said("quota.evidence.change", current=28, proposed=21),
         "expected_effect": _said("quota.effect.rightsize", team="vision", cluster="east", freed=7)},
        {"plan_id": "q", "cluster": "west", "kind": "advice", "name": "west/eval", "team": "nlp",
         "current_gpus": None, "proposed_gpus": None, "reason": _said("quota.advice.capacity", queue="west/eval",
                                                                      cluster="west"),
         "evidence": "", "expected_effect": ""},
    ], schema=QUOTA_PLAN_ITEMS, orient="row")
    replay = pl.DataFrame([{"cluster": "east", "group": "team", "subject": "vision", "jobs": 10,
                            "observed_p50_s": 0.0, "observed_p95_s": 600.0, "observed_gpu_hours": 5.0,
                            "current_p50_s": 0.0, "current_p95_s": 660.0, "current_gpu_hours": 5.0,
                            "plan_p50_s": 0.0, "plan_p95_s": 660.0, "plan_gpu_hours": 5.0}])
    plan = Plan.from_frame("q", "2026-03", CREATED, items, replay=replay)
    assert [i.name for i in plan.changes] == ["vision"]  # advice is never written to a scheduler
    assert Plan.from_dict(json.loads(plan.to_json())) == plan
    en = render_text(plan)
    assert "1. Right-size vision's GPU limit on east: the limit never bound." in en
    assert "   evidence: limit 28 GPUs → 21 GPUs" in en
    assert "2  west     advice   west/eval  nlp" in en
    waits = [line.split() for line in en.splitlines() if line.startswith("east     team")]
    assert waits[0] == ["east", "team", "vision", "10", "10m", "11m", "1m", "11m"]  # observed, now, error, plan
    assert waits[1] == ["east", "team", "vision", "0s", "0s", "0s", "5.0", "GPU-hours", "5.0", "GPU-hours", "5.0",
                        "GPU-hours"]
    zh = render_text(plan, "zh")
    assert "1. 收紧 vision 在 east 上的 GPU 上限：该上限从未生效。" in zh
    assert "east 的超额分配减少 7 块 GPU" in zh


def test_render_text_in_chinese_takes_headers_and_words_from_the_catalogue() -> None:
    text = render_text(Plan.from_frame("q-2026-03", "2026-03", CREATED, ITEMS), "zh")
    lines = text.splitlines()
    assert lines[0] == "配额方案 q-2026-03（2026-03，待批准），创建于 2026-04-01T08:00:00Z"
    assert lines[3].split() == ["#", "集群", "类型", "名称", "团队", "当前", "建议", "变化"]
    assert lines[4].split() == ["1", "east", "账户", "nlp", "nlp", "12", "10", "-2"]
    # the columns line up in a terminal, where a Chinese character takes two columns
    head, row = lines[3], lines[4]
    assert _width(head[:head.index("名称")]) == _width(row[:row.index("nlp")])


def test_the_replay_and_protected_objectives_are_printed() -> None:
    replay = pl.DataFrame([{"cluster": "east", "group": "team", "subject": "nlp", "jobs": 5, "observed_p95_s": 2880.0,
                            "current_p95_s": 3000.0, "plan_p95_s": 0.0, "observed_p50_s": 0.0, "current_p50_s": 0.0,
                            "plan_p50_s": 0.0, "observed_gpu_hours": 5.0, "current_gpu_hours": 5.0,
                            "plan_gpu_hours": 5.0}])
    flag = {"objective": "scenario_wait", "message": '[{"key":"quota.protected.scenario_wait","params":{'
            '"scenario":{"t":"interactive"},"cluster":{"t":"east"},"current":{"q":0,"kind":"duration"},'
            '"plan":{"q":600,"kind":"duration"}}}]'}
    plan = Plan.from_frame("q-2026-03", "2026-03", CREATED, ITEMS, replay=replay, protected=[flag])
    assert Plan.from_dict(plan.to_dict()) == plan
    lines = render_text(plan).splitlines()
    at = lines.index("Not approvable without an override: in the replay this plan makes protected objectives worse."
                     " Approve it only with a reason (gpusteward quota approve PLAN --override \"...\", or"
                     " \"override\" in the API call), which the audit keeps.")
    assert lines[at + 1] == ("- interactive on east: replayed wait p95 10m under the plan, against 0s under the"
                             " current limits.")
    head = lines.index("Cluster  Group  Subject  Job records  Observed p95  Replay now p95  Replay error  Plan p95")
    assert lines[head + 1].split() == ["east", "team", "nlp", "5", "48m", "50m", "2m", "0s"]
    zh = render_text(plan, "zh")
    assert "集群  分组  对象  作业记录  实测 p95  现行回放 p95  回放误差  方案 p95" in zh
