"""Protected objectives under a plan: what the replay says a plan does to work no quota change may hurt."""

from __future__ import annotations

import json
from typing import Any

from gpusteward.tables import QUOTA_SNAPSHOTS
from quota.analysis import MonthAnalysis, analyse
from quota.protected import protected_worse
from reports.locale import Formatter
from reports.plan_text import render
from sla.common import classified_jobs, window_of
from tests.sla.builders import T0, config, frame, inputs, job

LINES = """
[[protection.inference_reserve]]
cluster = "east"
min_gpus = 4

[[protection.queue_wait]]
queue = "east/interactive"
max_wait = "30m"
"""


def _month() -> list[dict[str, Any]]:
    # nlp may run 8 of east's 16 GPUs: sixteen 1-GPU training jobs of two hours, eight wait on its limit.
    # Two vision notebooks arrive ten minutes in and start at once on the GPUs nlp's limit leaves free.
    jobs = [job(n, submit=0, start=0 if n <= 8 else 120, end=120 if n <= 8 else 240) for n in range(1, 17)]
    jobs += [job(100 + n, partition="interactive", account="vision", submit=10, start=10, end=40) for n in (1, 2)]
    return jobs


def _analysis(extra: str = LINES) -> tuple[MonthAnalysis, Any]:
    cfg = config(extra)
    month = inputs(jobs=_month())
    window = window_of(month)
    quotas = frame([{"cluster": "east", "ts": T0, "kind": "account", "name": n, "gpu_limit": 8}
                    for n in ("nlp", "vision")], QUOTA_SNAPSHOTS)
    return analyse(classified_jobs(month, cfg), quotas, cfg, window.start, window.end), cfg


def test_a_raise_that_takes_the_notebooks_and_the_inference_reserve_is_flagged() -> None:
    analysis, cfg = _analysis()
    # Raised to 16, nlp takes every GPU at once: the notebooks wait until its first jobs end (110 min),
    # and nothing is left to inference for those two hours.
    flags = {f["objective"]: f for f in protected_worse(analysis, {("east", "nlp"): 16}, cfg)}
    assert sorted(flags) == ["inference_reserve", "queue_wait", "scenario_wait"]
    assert (flags["inference_reserve"]["current"], flags["inference_reserve"]["plan"]) == (0.0, 7200.0)
    assert (flags["queue_wait"]["current"], flags["queue_wait"]["plan"]) == (0.0, 2.0)
    assert flags["scenario_wait"]["subject"] == "interactive"
    assert (flags["scenario_wait"]["current"], flags["scenario_wait"]["plan"]) == (0.0, 6600.0)
    text = render(flags["scenario_wait"]["message"], Formatter("en"))
    assert text == "interactive on east: replayed wait p95 1h 50m under the plan, against 0s under the current limits."
    zh = render(flags["inference_reserve"]["message"], Formatter("zh"))
    assert zh.startswith("east 的推理预留：按方案回放，在线推理可用 GPU 少于 4 块 GPU 的时长为 2小时")
    json.dumps(flags)  # stored in the plan's body as it is


def test_a_change_that_leaves_the_protected_work_alone_is_not_flagged() -> None:
    analysis, cfg = _analysis()
    assert protected_worse(analysis, {("east", "nlp"): 9}, cfg) == []  # one more GPU leaves room for both notebooks
    assert protected_worse(analysis, {}, cfg) == []


def test_only_the_configured_objectives_are_protected() -> None:
    analysis, cfg = _analysis(extra='[quota]\nprotected_scenarios = ["training"]\n')
    flags = protected_worse(analysis, {("east", "nlp"): 16}, cfg)
    assert flags == []  # no reserve or queue line, and training's wait only gets shorter
