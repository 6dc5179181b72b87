"""`gpusteward reclaim plan` over a real warehouse, in English and Chinese: what would happen now and why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import get_args

import polars as pl
import pytest
from click.testing import CliRunner

from gpusteward.config.reclaim import ReclaimAction, ReclaimMode, ReclaimWhen
from gpusteward.tables import GPU_MINUTES, JOBS, PENDING_JOBS
from reports.locale import load_catalogue
from service.cli import cli
from service.cli_reclaim import SECTIONS, plan_lines
from sla.reclaim import reclaim_plan
from sla.reclaim_inputs import REASONS, VERDICTS
from tests.sla.builders import BASE_TOML, at, frame
from tests.sla.reclaim_builders import (
    ALL_IDLE,
    BUSY,
    NOW,
    POLICIES,
    gpu_minutes_of,
    notebook,
    quiet_windows,
    reclaim_config,
    reclaim_inputs,
    replica,
    trainer,
)
from warehouse import open_warehouse


def _pool(tmp_path: Path, extra: str = "") -> Path:
    config = tmp_path / "gpusteward.toml"
    config.write_text('[warehouse]\npath = "w.duckdb"\n' + BASE_TOML.replace("TZ", "UTC") + POLICIES + extra,
                      encoding="utf-8")
    # Notebook 1 idle for four hours while job 7 waits; training job 2 busy; training job 3 on a silent host.
    minutes = pl.concat([
        frame(gpu_minutes_of(1, ALL_IDLE, host="h1"), GPU_MINUTES),
        frame(gpu_minutes_of(2, [BUSY] * 240, host="h2"), GPU_MINUTES),
    ]).with_columns(pl.format("GPU-{}-{}", "host", "gpu").alias("uuid"))
    pending = [{"cluster": "east", "ts": at(235), "job_id": 7, "gpus_requested": 2, "submit_time": at(200)}]
    with open_warehouse(tmp_path / "w.duckdb") as wh:
        wh.ingest("test", {"jobs": frame([notebook(1, user="ana"), trainer(2), trainer(3)], JOBS),
                           "gpu_minutes": minutes, "pending_jobs": frame(pending, PENDING_JOBS)})
    return config


def _plan(config: Path, *args: str) -> str:
    result = CliRunner().invoke(cli, ["reclaim", "plan", "--config", str(config), *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_the_plan_in_english_says_what_would_happen_and_why(tmp_path: Path) -> None:
    out = _plan(_pool(tmp_path), "--lang", "en")  # at the minute after the last one stored: NOW
    assert out.splitlines() == [
        "Reclaim plan at 2026-03-01 04:00 (UTC): 3 policies; at most 5 actions per cluster in any hour",
        "Candidates (1):",
        # The plan reads three hours (the longest idle_for and one more): idle at least since 01:00.
        "  east job 1 (team nlp, Interactive, user ana): 1 GPUs, idle since 2026-03-01 01:00 at the latest"
        " (3h or more)",
        "    policy notebooks (idle while others wait): cancel, shadow mode (recorded, never done)",
        "    1 jobs that could use its GPUs wait for 2 GPUs",
        "    warn the owner now (due since 2026-03-01 03:00); action due 2026-03-01 05:00",
        "Left alone (2):",
        "  east job 2 (team nlp, Training, user u): 1 GPUs",
        "    policy training (idle): requeue, shadow mode (recorded, never done)",
        "    left alone: busy",
        "  east job 3 (team nlp, Training, user u): 1 GPUs",
        "    policy training (idle): requeue, shadow mode (recorded, never done)",
        "    left alone: no telemetry in the last minute (a silent exporter or host is never idle)",
        "Dry run: no scheduler action was taken and nobody was notified.",
    ]


def test_the_plan_in_chinese(tmp_path: Path) -> None:
    out = _plan(_pool(tmp_path), "--lang", "zh", "--at", "2026-03-01T04:00")
    assert "候选（1）：" in out
    assert "    策略 notebooks（空闲且有作业在等待）：取消，影子模式（只记录，不执行）" in out
    assert "    不处理：最近一分钟没有遥测数据（静默的导出器或主机从不视为空闲）" in out
    assert "预演：未对调度器执行任何动作，也未通知任何人。" in out
    assert "Candidates" not in out


def test_the_kill_switch_and_an_earlier_instant(tmp_path: Path) -> None:
    config = _pool(tmp_path, "[reclaim]\npaused = true\n")
    out = _plan(config, "--lang", "en", "--at", "2026-03-01T01:30")
    assert "Kill switch on (reclaim.paused = true)" in out.splitlines()[1]
    # At 01:30 the notebook has been idle 90 minutes of the two hours its policy needs.
    assert "    left alone: idle, but not yet for the policy's idle_for" in out
    assert "Paused" not in out


def test_json_rows_and_nothing_to_plan(tmp_path: Path) -> None:
    config = _pool(tmp_path)
    data = json.loads(_plan(config, "--json", "--at", NOW.strftime("%Y-%m-%dT%H:%M")))
    assert [(r["job_id"], r["verdict"], r["reason"]) for r in data["plan"]] == [
        ("1", "candidate", None), ("2", "left_alone", "busy"), ("3", "left_alone", "no_data")]
    bare = tmp_path / "bare.toml"
    bare.write_text('[warehouse]\npath = "w.duckdb"\n', encoding="utf-8")
    assert "No reclaim policy is configured" in _plan(bare, "--lang", "en")


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_an_empty_warehouse_says_what_to_do(tmp_path: Path, lang: str) -> None:
    config = tmp_path / "gpusteward.toml"
    config.write_text('[warehouse]\npath = "w.duckdb"\n', encoding="utf-8")
    with open_warehouse(tmp_path / "w.duckdb"):
        pass
    result = CliRunner().invoke(cli, ["reclaim", "plan", "--config", str(config), "--lang", lang])
    assert result.exit_code != 0
    assert "--at" in result.output


def test_every_code_the_plan_writes_has_a_text_in_both_languages() -> None:
    assert set(SECTIONS) == set(VERDICTS)
    keys = [f"reclaim.reason.{r}" for r in REASONS] + [f"reclaim.section.{v}" for v in VERDICTS]
    keys += [f"reclaim.stage.{s}" for s in ("warn", "grace", "act", "warned")]
    keys += [f"reclaim.when.{w}" for w in get_args(ReclaimWhen)]
    keys += [f"reclaim.action.{a}" for a in get_args(ReclaimAction)]
    keys += [f"reclaim.mode.{m}" for m in get_args(ReclaimMode)]
    for lang in ("en", "zh"):
        catalogue = load_catalogue(lang, "service")
        assert [k for k in keys if k not in catalogue] == []


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_capped_and_inference_candidates_are_written(lang: str) -> None:
    config = reclaim_config("[reclaim]\nmax_actions_per_hour = 1\n")
    rows = gpu_minutes_of(2, ALL_IDLE) + gpu_minutes_of(3, [BUSY] * 150 + [0.0] * 90, host="h2")
    running = [trainer(2), trainer(3), replica(11, 0), replica(12, 10), replica(13, 20)]
    plan = reclaim_plan(reclaim_inputs(running=running, gpu_minutes=rows, windows=quiet_windows()), config)
    text = "\n".join(plan_lines(plan, config, NOW, lang))
    capped = {"en": "Held back by the per-hour cap (1):", "zh": "因每小时上限暂缓（1）："}[lang]
    service = {"en": "    service chat has had no requests", "zh": "    服务 chat 没有请求"}[lang]
    scale = {"en": "scale down", "zh": "缩容"}[lang]
    assert capped in text
    assert service in text
    assert scale in text
    # Only the candidate replica is said to be without requests; the two kept ones only name their service.
    assert text.count(service) == 1
    assert text.count({"en": "    serves chat", "zh": "    服务于 chat"}[lang]) == 2
