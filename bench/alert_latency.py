"""From a breach's evaluation to the receiving webhook: the engine, the outbox and a signed POST,
against a bare POST of the same body to the same local receiver.

Each round ticks the engine with one new firing breach (the demo's planted east reserve breach,
given a new fingerprint) and waits until the receiver holds it. The ratio says what the engine
and the outbox add to the HTTP round trip they cannot avoid.
"""

from __future__ import annotations

import dataclasses
import json
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx

from alerts.outbox import MemoryOutbox, tick
from alerts.webhook import WebhookNotifier
from gpusteward.config.alerting import AlertEngineConfig
from tests.alerts.helpers import east_reserve_breach
from tests.alerts.server import Recorder, recording_server

ENGINE = AlertEngineConfig(group_interval=timedelta(0))
EVALUATED_AT = datetime(2026, 10, 12, 14, 0, tzinfo=UTC)
WAIT_S = 10


def _until_received(hook: Recorder, count: int) -> None:
    deadline = time.perf_counter() + WAIT_S
    while len(hook.bodies) < count:
        if time.perf_counter() > deadline:
            raise RuntimeError(f"the receiver got {len(hook.bodies)} of {count} notifications in {WAIT_S} s")
        time.sleep(0.0005)


def _engine_round_trips(rounds: int) -> tuple[list[float], bytes]:
    store = MemoryOutbox()
    samples = []
    with recording_server() as hook:
        notifier = WebhookNotifier("ops", hook.url, secret="s", timeout_s=5)
        base = east_reserve_breach(still_going=True)
        for n in range(rounds):
            alert = dataclasses.replace(base, fingerprint=f"{base.fingerprint[:-4]}{n:04d}")
            began = time.perf_counter()
            tick(store, EVALUATED_AT, [alert], engine=ENGINE, notifiers={"ops": notifier})
            _until_received(hook, n + 1)
            samples.append(time.perf_counter() - began)
        body = hook.bodies[-1]
    return samples, body


def _bare_posts(rounds: int, body: bytes) -> list[float]:
    samples = []
    with recording_server() as hook, httpx.Client(timeout=5) as client:
        for n in range(rounds):
            began = time.perf_counter()
            client.post(hook.url, content=body, headers={"content-type": "application/json"})
            _until_received(hook, n + 1)
            samples.append(time.perf_counter() - began)
    return samples


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_ms": statistics.median(ordered) * 1000,
        "p95_ms": ordered[max(0, round(0.95 * len(ordered)) - 1)] * 1000,
        "max_ms": ordered[-1] * 1000,
    }


def run(quick: bool) -> dict[str, Any]:
    rounds = 20 if quick else 200
    engine, body = _engine_round_trips(rounds)
    bare = _bare_posts(rounds, body)
    alerts_in_body = len(json.loads(body)["alerts"])
    return {
        "rounds": rounds,
        "alerts_per_notification": alerts_in_body,
        "engine_to_webhook": _summary(engine),
        "bare_post": _summary(bare),
        "ratio_median": statistics.median(engine) / statistics.median(bare),
    }
