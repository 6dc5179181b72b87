"""A small hand-made month with every problem the demo plants, shared by report and dashboard tests.

Planted: starving queue west/eval (evaluation p95 5h30m against 1h), team vision at 1.62x its
entitled share, chat-70b breaking latency p99 8s, research's idle notebooks (243 idle GPU-hours
against 100), two inference-reserve breaches on east, and an exporter outage on west.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import polars as pl

from gpusteward import evidence as ev
from gpusteward.config.schema import Config, InferenceReserveLine, ProtectionConfig, TeamConfig
from gpusteward.config.texts import LocalText
from gpusteward.domain import Month
from reports.model import Cell, Message, Quantity, Text
from reports.plan_text import encode
from sla.outputs import MonthOutputs
from sla.results import (
    BREACH_EPISODES,
    COMPLETENESS,
    DAILY_USAGE,
    FAILURES,
    IDLE_BY_JOB,
    PLAN_PROTECTED,
    PLAN_REPLAY,
    QUOTA_PLAN_ITEMS,
    SLA_RESULTS,
    USAGE,
)
from tests.reports.showback_fixture import showback_frame

MONTH = Month(2026, 11)

def _waits(n: int, longest: float, job: str, team: str) -> str:
    return ev.encode([ev.part("started", n=n),
                      ev.part("longest_wait_job", wait=ev.duration(longest), job=job, team=team)])


def _month_value(indicator: str, value: float, requests: int) -> str:
    return ev.encode([ev.part("month_value", indicator=ev.Word("indicator", indicator), value=ev.duration(value),
                              n=requests)])


def _share(used: float, borrowed: float, contended: float) -> str:
    return ev.encode([
        ev.part("team_use", used=ev.gpu_hours(used), borrowed=ev.gpu_hours(borrowed),
                contended=ev.gpu_hours(contended)),
        ev.part("entitlement_basis", h=ev.duration(720 * 3600.0)),
    ])


def _held(*jobs: tuple[str, int, datetime]) -> str:
    holders = tuple(ev.part("holder", scenario=ev.Word("scenario", "training"), job=job, team="vision",
                            gpus=ev.gpus(gpus), start=start) for job, gpus, start in jobs)
    return ev.encode([ev.part("gpus_in_cluster", n=ev.gpus(20)), ev.part("held_by_other", list=holders)])


_TRAIN_WAITS = _waits(412, 9000.0, "1377", "nlp")
_EVAL_WAITS = _waits(96, 45000.0, "2077", "nlp")

_RESULTS: list[tuple[Any, ...]] = [
    # scenario, kind, subject, indicator, value, objective, met, budget_left, rows, completeness, evidence
    ("training", "queue", "east/train", "queue_wait_p50", 1800.0, None, None, None, 412, 0.99,
     _TRAIN_WAITS),
    ("training", "queue", "east/train", "queue_wait_p95", 5400.0, 7200.0, True, 0.4, 412, 0.99, _TRAIN_WAITS),
    ("training", "queue", "east/train", "success_rate", 0.91, 0.5, True, None, 398, 0.99,
     ev.encode([ev.part("completed_share", n=362, m=398, p=ev.ratio(0.91)),
                ev.part("others", list=(ev.part("state_count", n=30, state="FAILED"),
                                        ev.part("state_count", n=6, state="TIMEOUT")))])),
    ("evaluation", "queue", "west/eval", "queue_wait_p50", 4500.0, None, None, None, 96, 1.0, _EVAL_WAITS),
    ("evaluation", "queue", "west/eval", "queue_wait_p95", 19800.0, 3600.0, False, -4.5, 96, 1.0, _EVAL_WAITS),
    ("evaluation", "queue", "west/eval", "queue_wait_max", 45000.0, None, None, None, 96, 1.0, _EVAL_WAITS),
    ("batch_inference", "queue", "west/batch", "queue_wait_p95", None, 14400.0, None, None, 0, 0.0, ""),
    ("online_inference", "service", "chat-70b", "latency_p95", 5.2, None, None, None, 8640, 0.985,
     _month_value("latency_p95", 5.2, 1_200_000)),
    ("online_inference", "service", "chat-70b", "latency_p99", 11.4, 8.0, False, -0.8, 8640, 0.985,
     ev.joined(_month_value("latency_p99", 11.4, 1_200_000), ev.encode([
         ev.part("above_in_windows", indicator=ev.Word("indicator", "latency_p99"), value=ev.duration(8.0), n=432,
                 m=8640, p=ev.ratio(0.05)),
         ev.part("peak_hours", hours=ev.Names(("09:00-12:00", "19:00-22:00")), tz="Asia/Shanghai",
                 p=ev.ratio(0.31)),
     ]))),
    ("online_inference", "service", "chat-70b", "error_rate", 0.004, 0.05, True, 0.92, 8640, 0.985,
     ev.encode([ev.part("errors_in", n=4800, m=1_200_000, p=ev.ratio(0.004))])),
    ("online_inference", "service", "embed-small", "latency_p99", 0.85, 8.0, True, 1.0, 8640, 1.0,
     _month_value("latency_p99", 0.85, 310_000)),
    ("interactive", "team", "research", "time_to_gpu_p95", 420.0, 900.0, True, 0.7, 58, 0.97,
     ev.encode([ev.part("sessions", n=58), ev.part("longest_wait", wait=ev.duration(1500.0))])),
    ("interactive", "team", "research", "idle_gpu_hours", 14600 / 60, 100.0, False, None, 58, 0.97,
     "idle_by_job team=research scenario=interactive"),
    ("all", "team", "vision", "share_over_entitlement", 1.62, 1.25, False, None, 25, 1.0,
     _share(3100.5, 1210.0, 640.0)),
    ("all", "team", "nlp", "share_over_entitlement", 0.9, 1.25, True, None, 216, 1.0, _share(4840.0, 120.0, 0.0)),
]

_IDLE: list[tuple[Any, ...]] = [
    # cluster, job, team, scenario, gpu_minutes, busy, idle, idle_held, no_data, util_source, zero_activity,
    # array job id, task id (2050-2052 are tasks 1-3 of array 2049: one row, `2049_[1-3]`)
    ("west", "31001", "research", "interactive", 9000, 1200, 1800, 6000, 0, "gr_engine_active", 7500, None, None),
    ("west", "31002", "research", "interactive", 7200, 600, 1500, 5100, 120, "gr_engine_active", 6300, None, None),
    ("east", "31003", "research", "interactive", 3000, 2800, 200, 0, 0, "gpu_util", 150, None, None),
    ("west", "20010", "nlp", "training", 40000, 39000, 1000, 0, 2880, "mixed", 2600, None, None),
    ("east", "20011", "vision", "training", 30000, 29500, 500, 0, 0, "gr_engine_active", 900, None, None),
    ("west", "2050", "nlp", "evaluation", 600, 580, 0, 0, 0, "gr_engine_active", 12, 2049, 1),
    ("west", "2051", "nlp", "evaluation", 600, 420, 180, 0, 0, "gr_engine_active", 190, 2049, 2),
    ("west", "2052", "nlp", "evaluation", 600, 480, 120, 0, 0, "gr_engine_active", 130, 2049, 3),
]

_USAGE: list[tuple[Any, ...]] = [
    ("east", "training", "nlp", 4200.0, 120),
    ("east", "training", "vision", 3100.5, 25),
    ("west", "evaluation", "nlp", 640.0, 96),
    ("east", "online_inference", "platform", 5760.0, 4),
    ("west", "interactive", "research", 1400.0, 58),
    ("west", "batch_inference", "speech", 820.25, 30),
    ("east", "general_compute", "unattributed", 12.5, 3),
]

_COMPLETENESS: list[tuple[Any, ...]] = [
    ("gpu_minutes", "east", 1382400, 1382400, 0, ""),
    ("gpu_minutes", "west", 1382400, 1368000, 14400,
     ev.encode([ev.part("gap", host="west-gpu-05", gpus="0,1,2,3,4,5,6,7", start=datetime(2026, 11, 18, 2),
                        end=datetime(2026, 11, 19, 8), lasted=ev.duration(30 * 3600.0))])),
    ("inference_windows", "east", 8640, 8600, 40,
     ev.encode([ev.part("most_missing", service="chat-70b", instance="east-gpu-02:8000", missing=40, expected=8640)])),
    ("jobs", "east", 1200, 1200, 0, ""),
    ("jobs", "west", 900, 900, 0, ""),
]

_FALLBACK = "Preempt or pause low-priority training on east-gpu-01/02 until online inference holds 12 GPUs again."
_FALLBACK_ZH = "抢占或暂停 east-gpu-01/02 上的低优先级训练，直到在线推理重新拥有 12 块 GPU。"
_EPISODES: list[tuple[Any, ...]] = [
    ("inference_reserve", "east", datetime(2026, 11, 12, 10, 5), 75, 8.0, 12.0, "critical", _FALLBACK,
     _held(("20011", 4, datetime(2026, 11, 12, 9)), ("20014", 4, datetime(2026, 11, 12, 9, 40)))),
    ("inference_reserve", "east", datetime(2026, 11, 21, 14, 0), 45, 10.0, 12.0, "critical", _FALLBACK,
     _held(("20011", 6, datetime(2026, 11, 21, 13)))),
]

def _m(key: str, **params: str | float | tuple[float | None, str]) -> Message:
    """A stored plan message: text params verbatim, (value, kind) params as quantities."""
    cells: list[tuple[str, Cell]] = []
    for name, value in params.items():
        cells.append((name, Quantity(value[0], value[1]) if isinstance(value, tuple) else Text(str(value))))  # type: ignore[arg-type]
    return Message(key, tuple(cells))


_PLAN: list[tuple[Any, ...]] = [
    ("plan-2026-11-a", "east", "account", "vision", "vision", 16, 12,
     encode([_m("quota.reason.fairness", team="vision", cluster="east", multiple=(1.62, "multiple"))]),
     encode([_m("quota.evidence.contended", team="vision", cluster="east", contended=(310.0, "gpu_hours"),
                borrowed=(120.0, "gpu_hours"), entitled=(4.8, "gpus"), objective=(1.2, "multiple")),
             _m("quota.evidence.change", current=(16, "gpus"), proposed=(12, "gpus"))]),
     encode([_m("quota.effect.replay", team="nlp", cluster="east", p95_before=(5400.0, "duration"),
                p95_after=(3900.0, "duration"), p50_before=(1800.0, "duration"), p50_after=(1500.0, "duration"),
                hours_before=(2400.0, "gpu_hours"), hours_after=(2480.0, "gpu_hours"),
                observed=(5200.0, "duration"), error=(200.0, "duration"))])),
    ("plan-2026-11-a", "west", "advice", "west/eval", "nlp", None, None,
     encode([_m("quota.advice.priority", queue="west/eval", cluster="west")]),
     encode([_m("quota.evidence.missed", queue="west/eval", indicator="queue_wait_p95", value=(19800.0, "duration"),
                objective=(3600.0, "duration"))]),
     encode([])),
]

# cluster, group, subject, jobs, observed p50/p95/GPU-h, replay under current limits, replay under the plan
_REPLAY: list[tuple[Any, ...]] = [
    ("east", "team", "nlp", 412, 1800.0, 5200.0, 2400.0, 1800.0, 5400.0, 2400.0, 1500.0, 3900.0, 2480.0),
    ("east", "team", "vision", 120, 600.0, 1200.0, 1900.0, 700.0, 1300.0, 1890.0, 900.0, 2100.0, 1810.0),
    ("east", "queue", "east/train", 412, 1800.0, 5400.0, 4300.0, 1800.0, 5600.0, 4290.0, 1500.0, 4100.0, 4290.0),
]


_FAILURES: list[tuple[Any, ...]] = [
    # scenario, team, queue, name, state, records, cause
    ("evaluation", "vision", "west/eval", "eval-harness", "FAILED", 14, "exit_error"),
    ("training", "nlp", "east/train", "llm-7b", "TIMEOUT", 6, "time_limit"),
    ("training", "nlp", "east/train", "llm-7b", "FAILED", 3, "out_of_memory"),
    ("evaluation", "nlp", "west/eval", "eval-mmlu", "FAILED", 2, "aborted"),
    ("interactive", "research", "west/notebooks", "jupyter", "NODE_FAIL", 1, "node_failure"),
]

# The plan's replay lengthens the notebooks' wait on east: it needs an override to be approved.
_PROTECTED: list[tuple[Any, ...]] = [
    ("scenario_wait", "east", "interactive", 240.0, 1500.0, None,
     encode([_m("quota.protected.scenario_wait", scenario="interactive", cluster="east", current=(240.0, "duration"),
                plan=(1500.0, "duration"))])),
]


def _daily() -> pl.DataFrame:
    """Thirty days of training (busier on weekdays), steady serving, and evaluation from the 10th; no
    telemetry for evaluation on the 20th (a gap in its utilisation line)."""
    rows: list[tuple[Any, ...]] = []
    for i in range(30):
        day = MONTH.start.date() + timedelta(days=i)
        weekday = day.weekday() < 5
        rows.append((day, "training", "nlp", 300.0 if weekday else 180.0, 18000 if weekday else 10800,
                     0.62 if weekday else 0.48))
        rows.append((day, "online_inference", "platform", 288.0, 17280, 0.21))
        if i >= 9:
            util = (0, None) if i == 19 else (3600, 0.35)
            rows.append((day, "evaluation", "vision", 60.0 + 4 * i, *util))
    # no idle minutes per day: a month stored before migration 025 carried none
    return pl.DataFrame([(*r, None, None) for r in rows], schema=DAILY_USAGE, orient="row")


def demo_config() -> Config:
    teams = {
        "nlp": TeamConfig(entitled_share=0.30, display_name="NLP"),
        "vision": TeamConfig(entitled_share=0.15, display_name="Vision"),
        "speech": TeamConfig(entitled_share=0.15, display_name="Speech"),
        "research": TeamConfig(entitled_share=0.15, display_name="Research"),
        "platform": TeamConfig(entitled_share=0.25, display_name="Platform (serving)"),
    }
    fallback = LocalText(_FALLBACK, (("en", _FALLBACK), ("zh", _FALLBACK_ZH)))
    protection = ProtectionConfig(
        inference_reserve=[InferenceReserveLine(cluster="east", min_gpus=12, fallback=fallback)]
    )
    return Config(teams=teams, protection=protection)


def demo_outputs() -> MonthOutputs:
    results = pl.DataFrame(
        [(str(MONTH), *r) for r in _RESULTS], schema=SLA_RESULTS, orient="row"
    )
    episodes = pl.DataFrame(
        [(line, subject, start, start + timedelta(minutes=minutes), minutes, *rest)
         for line, subject, start, minutes, *rest in _EPISODES],
        schema=BREACH_EPISODES, orient="row",
    )
    return MonthOutputs(
        month=MONTH,
        results=results,
        idle=pl.DataFrame(_IDLE, schema=IDLE_BY_JOB, orient="row"),
        episodes=episodes,
        usage=pl.DataFrame(_USAGE, schema=USAGE, orient="row"),
        completeness=pl.DataFrame(_COMPLETENESS, schema=COMPLETENESS, orient="row"),
        plan_items=pl.DataFrame(_PLAN, schema=QUOTA_PLAN_ITEMS, orient="row"),
        plan_replay=pl.DataFrame(_REPLAY, schema=PLAN_REPLAY, orient="row"),
        plan_protected=pl.DataFrame(_PROTECTED, schema=PLAN_PROTECTED, orient="row"),
        daily_usage=_daily(),
        failures=pl.DataFrame(_FAILURES, schema=FAILURES, orient="row"),
        showback=showback_frame(),
    )


def empty_outputs() -> MonthOutputs:
    """A month with no rows at all."""
    return MonthOutputs(
        month=MONTH,
        results=pl.DataFrame(schema=SLA_RESULTS),
        idle=pl.DataFrame(schema=IDLE_BY_JOB),
        episodes=pl.DataFrame(schema=BREACH_EPISODES),
        usage=pl.DataFrame(schema=USAGE),
        completeness=pl.DataFrame(schema=COMPLETENESS),
        plan_items=pl.DataFrame(schema=QUOTA_PLAN_ITEMS),
    )


def with_frames(outputs: MonthOutputs, **frames: pl.DataFrame) -> MonthOutputs:
    """The outputs with some frames replaced (e.g. emptied, or lacking columns)."""
    merged = {
        name: frames.get(name, getattr(outputs, name))
        for name in (
            "results", "idle", "episodes", "usage", "completeness", "plan_items", "daily_usage", "failures", "arrays",
            "accounts",
        )
    }
    unknown = set(frames) - set(merged)
    if unknown:
        raise TypeError(f"MonthOutputs has no frames {sorted(unknown)}")
    return MonthOutputs(outputs.month, **merged)
