"""Per inference service: replicas, GPUs serving and capacity headroom (sla.capacity)."""

from __future__ import annotations

from typing import Any

import polars as pl
import pytest

from gpusteward.evidence import encode
from sla.capacity import NEAR_CAPACITY, capacity_headroom, near_capacity, service_slots
from sla.inference import OnlineInferenceEvaluator
from tests.sla.builders import at, config, inputs, job, window
from tests.sla.english import english

RESERVE = """
[[protection.inference_reserve]]
cluster = "east"
min_gpus = 10
"""
NAMED_JOBS = """
[[inference.service_jobs]]
name_has_service = true
"""


def _w(service: str, end: float, requests: float, *, instance: str = "a", waiting: float = 0.0,
       kv: float | None = 0.1) -> dict[str, Any]:
    row = window(service, end, [requests] * 6, instance=instance)
    return {**row, "waiting": waiting, "kv_cache_usage": kv}


def _row(frame: pl.DataFrame, indicator: str, service: str) -> dict[str, Any]:
    rows = frame.filter((pl.col("indicator") == indicator) & (pl.col("subject") == service))
    assert rows.height == 1, rows
    return rows.row(0, named=True)


def _slotted(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return inputs(windows=rows).inference_windows.with_columns(
        (pl.col("ts") - pl.duration(seconds=1)).dt.truncate("5m").alias("slot")
    )


def _busy_service(service: str, *, saturate_at: float) -> list[dict[str, Any]]:
    """20 slots, two replicas each, load rising 30..600 requests per replica; queueing from `saturate_at` up."""
    rows = []
    for slot in range(20):
        n = 30.0 * (slot + 1)
        for instance in ("a", "b"):
            rows.append(_w(service, (slot + 1) * 5, n, instance=instance, waiting=2.0 if n >= saturate_at else 0.0))
    return rows


def test_headroom_from_the_load_where_the_service_saturates() -> None:
    frame = OnlineInferenceEvaluator().evaluate(inputs(windows=_busy_service("chat", saturate_at=450)), config())
    head = _row(frame, "capacity_headroom", "chat")
    # Per-replica rates are n / 300 s; saturated slots hold n = 450..600 (median 525),
    # the busy load is the 95th percentile of n = 30..600: 571.5. 1 - 571.5 / 525 < 0: no headroom.
    assert head["value"] == 0.0
    assert "saturated" in english(head["evidence"])
    quiet = OnlineInferenceEvaluator().evaluate(
        inputs(windows=_busy_service("chat", saturate_at=10_000)), config()
    )
    # Never saturated: the KV cache (10% full) leaves 90%.
    assert _row(quiet, "capacity_headroom", "chat")["value"] == pytest.approx(0.9)


def test_headroom_is_one_minus_busy_load_over_capacity() -> None:
    rows = []
    for slot in range(40):
        n = 300.0 if slot < 10 else 150.0  # ten saturated slots at 1 req/s per replica, the rest at half
        rows.append(_w("chat", (slot + 1) * 5, n, waiting=1.0 if slot < 10 else 0.0))
    slots = service_slots(_slotted(rows), None)
    value, parts = capacity_headroom(slots)
    # p95 of the load is 1 req/s (the saturated slots are a quarter of the month), capacity 1 req/s.
    assert value == pytest.approx(0.0)
    assert "saturated (requests queued, KV cache full or p99 above objective) in 10 slots" in english(encode(parts))
    # 3 saturated slots of 100 at 1 req/s; the busy load (p95) is the others' 0.5 req/s: half is left.
    light = [_w("chat", (i + 1) * 5, 300.0 if i < 3 else 150.0, waiting=1.0 if i < 3 else 0.0) for i in range(100)]
    value, _ = capacity_headroom(service_slots(_slotted(light), None))
    assert value == pytest.approx(0.5)
    # Two saturated slots are too few to place capacity: the KV cache (10% full) decides.
    fewer = [{**r, "waiting": 0.0} if i == 2 else r for i, r in enumerate(light)]
    value, parts = capacity_headroom(service_slots(_slotted(fewer), None))
    assert value == pytest.approx(0.9)
    assert "too few" in english(encode(parts))


def test_latency_above_objective_counts_as_saturated() -> None:
    slos = '[[scenarios.online_inference.slos]]\nindicator = "latency_p99"\nthreshold = "3s"\n'
    rows = []
    for slot in range(30):
        n = 300.0 if slot % 3 == 0 else 150.0
        slow = slot % 3 == 0
        counts = [0.0, 0.0, 0.0, n, n, n] if slow else [n] * 6  # slow slots: every request in (4, 8]
        rows.append({**window("chat", (slot + 1) * 5, counts), "waiting": 0.0, "kv_cache_usage": 0.05})
    out = OnlineInferenceEvaluator().evaluate(inputs(windows=rows), config(slos))
    head = _row(out, "capacity_headroom", "chat")
    assert head["value"] == 0.0  # busy load = the load at which p99 broke
    without = OnlineInferenceEvaluator().evaluate(inputs(windows=rows), config())
    assert _row(without, "capacity_headroom", "chat")["value"] == pytest.approx(0.95)  # KV cache only


def test_replicas_and_gpus_serving_from_named_jobs() -> None:
    windows = []
    for slot in range(12):  # one hour; replica c reports only in the second half hour
        for instance in ("a", "b", "c") if slot >= 6 else ("a", "b"):
            windows.append(_w("chat-70b", (slot + 1) * 5, 30.0, instance=instance))
        windows.append(_w("chat", (slot + 1) * 5, 30.0))
    jobs = [
        job(1, partition="infer", account="platform", start=-100, end=None, gpus=2, name="vllm-chat-70b-0"),
        job(2, partition="infer", account="platform", start=-100, end=None, gpus=2,
            comment="vllm serve chat-70b --port 8001"),
        job(3, partition="infer", account="platform", start=30, end=None, gpus=2, name="vllm-chat-70b-2"),
        job(4, partition="infer", account="platform", start=-100, end=None, gpus=1, name="vllm-chat-0"),
        job(5, partition="train", start=0, end=None, gpus=4, name="chat-70b-finetune"),  # not inference
    ]
    got = OnlineInferenceEvaluator().evaluate(
        inputs(windows=windows, jobs=jobs, data_end=at(60)), config(RESERVE + NAMED_JOBS))
    replicas = _row(got, "replicas", "chat-70b")
    assert replicas["value"] == 2.5  # median of six slots with 2 and six with 3
    assert "fewest 2, most 3" in english(replicas["evidence"])
    assert "3 distinct replicas" in english(replicas["evidence"])
    gpus = _row(got, "gpus_serving", "chat-70b")
    assert gpus["value"] == pytest.approx(5.0)  # 2 + 2 the whole hour, 2 for half of it
    assert "(1, 2, 3)" in english(gpus["evidence"])
    assert _row(got, "gpus_serving", "chat")["value"] == pytest.approx(1.0)  # "chat" does not claim chat-70b's jobs
    head = _row(got, "capacity_headroom", "chat-70b")
    # Inference jobs on east hold 6 GPUs on average against a reserve of 10: two more replicas of 2 GPUs.
    assert "room for 2 more replicas of 2 GPUs" in english(head["evidence"])
    assert head["objective"] is None


def test_a_service_no_job_names_has_unknown_gpus_and_no_reserve_line() -> None:
    got = OnlineInferenceEvaluator().evaluate(inputs(windows=[_w("embed", 5, 10.0, kv=None)]), config())
    gpus = _row(got, "gpus_serving", "embed")
    assert gpus["value"] is None
    assert "no inference.service_jobs rule" in english(gpus["evidence"])
    head = _row(got, "capacity_headroom", "embed")
    assert head["value"] is None
    assert "capacity unknown" in english(head["evidence"])
    assert "no inference reserve line" in english(head["evidence"])


def test_near_capacity_uses_the_objective_else_the_default() -> None:
    results = pl.DataFrame({
        "indicator": ["capacity_headroom"] * 4 + ["latency_p99"],
        "subject": ["a", "b", "c", "d", "e"],
        "value": [0.05, 0.3, 0.3, None, 0.0],
        "objective": [None, None, 0.5, None, None],
    })
    assert near_capacity(results)["subject"].to_list() == ["a", "c"]
    assert NEAR_CAPACITY == 0.2
