"""The demo's closing summary comes from the service catalogue, in English or Chinese."""

from __future__ import annotations

import json
from importlib import resources

from gpusteward.domain import Month
from service.demo import demo_language, summary_lines
from tests.reports.english import english_sentences

LAPS: list[tuple[str, float, dict[str, object]]] = [
    ("simulate", 12.0, {"files": 130, "folder": "demo-out/data"}),
    ("import", 30.5, {"rows": "3,012,345", "db": "demo-out/gpusteward.duckdb"}),
    ("evaluate", 8.2, {"results": 1024, "missed": 17}),
    ("reclaim", 6.0, {"lines": 210, "turns": 180, "minutes": "15"}),
    ("alerts", 0.4, {"alerts": 9, "delivered": 9, "targets": "alerts.jsonl"}),
    ("review", 40.0, {"paths": "demo-out/reports/review-2026-10.zh.pdf"}),
    ("quota_plan", 0.1, {"changes": 4, "path": "demo-out/quota-plan-2026-10.json"}),
]


def _lines(lang: str) -> list[str]:
    return summary_lines(lang, month=Month(2026, 10), gpus=64, seed=7, total=91.2, laps=LAPS)


def test_the_english_summary() -> None:
    lines = _lines("en")
    assert lines[0] == "GPU Steward demo: simulated 2026-10 for 64 GPUs (seed 7) in 91s"
    assert lines[3] == "  evaluate       8.2s  1024 results, 17 missed objectives"


def test_the_chinese_summary_has_no_english_sentence() -> None:
    lines = _lines("zh")
    assert lines[0].startswith("GPU Steward 演示")
    assert english_sentences("\n".join(lines), ["GPU Steward"]) == []


def test_both_catalogues_have_the_same_keys() -> None:
    read = {lang: json.loads(resources.files("service").joinpath("locales", f"{lang}.json").read_text("utf-8"))
            for lang in ("en", "zh")}
    assert set(read["en"]) == set(read["zh"])


def test_the_language_comes_from_the_environment() -> None:
    assert demo_language({"GPUSTEWARD_LANG": "zh"}) == "zh"
    assert demo_language({"LANG": "zh_CN.UTF-8"}) == "zh"
    assert demo_language({"LC_ALL": "C.UTF-8", "LANG": "zh_CN.UTF-8"}) == "en"
    assert demo_language({}) == "en"
