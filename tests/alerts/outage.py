"""A receiver outage scenario on a fake clock, shared by the memory and warehouse outbox tests."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta

from alerts.model import Alert, fingerprint
from alerts.outbox import OutboxStore, TickResult, tick
from alerts.webhook import WebhookNotifier
from gpusteward.clock import FakeClock
from gpusteward.config.alerting import AlertEngineConfig
from tests.alerts.server import Recorder

T0 = datetime(2026, 10, 12, 9, 0, tzinfo=UTC)
ENGINE = AlertEngineConfig(group_interval=timedelta(0))


def breach(subject: str, start_min: int, end_min: int | None, now_min: int) -> Alert | None:
    """The alert one evaluation at `now_min` sees for an episode [start, end) in minutes from T0."""
    if now_min < start_min:
        return None
    start = T0 + timedelta(minutes=start_min)
    ended = end_min is not None and now_min >= end_min
    return Alert(
        fingerprint=fingerprint("inference_reserve", subject, start),
        status="resolved" if ended else "firing",
        labels={"alertname": "InferenceReserveBreach", "severity": "critical", "cluster": subject,
                "line": "inference_reserve"},
        annotations={"summary": f"reserve breach on {subject}", "fallback": "pause training"},
        starts_at=start,
        ends_at=T0 + timedelta(minutes=end_min) if ended and end_min is not None else None,
    )


# subject, start minute, end minute (None: still going at the end)
EPISODES = [("east", 5, 95), ("west", 30, 150), ("north", 100, None), ("south", 0, 20)]


def observed(now_min: int) -> list[Alert]:
    return [a for s, b, e in EPISODES if (a := breach(s, b, e, now_min)) is not None]


def expected() -> set[tuple[str, str]]:
    out: set[tuple[str, str]] = set()
    for s, b, e in EPISODES:
        fp = fingerprint("inference_reserve", s, T0 + timedelta(minutes=b))
        out.add((fp, "firing"))
        if e is not None:
            out.add((fp, "resolved"))
    return out


def received(srv: Recorder) -> Counter[tuple[str, str]]:
    seen: Counter[tuple[str, str]] = Counter()
    for raw in srv.bodies:
        for a in json.loads(raw)["alerts"]:
            seen[(a["fingerprint"], a["status"])] += 1
    return seen


def run_outage(
    srv: Recorder,
    open_store: Callable[[], AbstractContextManager[OutboxStore]],
    *,
    minutes: int = 180,
    down: range = range(60),
    restart_at: tuple[int, ...] = (),
) -> list[TickResult]:
    """Evaluate every minute; the receiver answers 503 during `down`; the store is reopened at `restart_at`."""
    clock = FakeClock(T0)
    notifier = WebhookNotifier("ops", srv.url, timeout_s=5)
    results: list[TickResult] = []
    stores: Iterator[int] = iter(range(1000))
    minute = 0
    while minute < minutes:
        next(stores)
        with open_store() as store:
            while minute < minutes:
                srv.status = 503 if minute in down else 200
                now = clock.now()
                results.append(tick(store, now, observed(minute), engine=ENGINE, notifiers={"ops": notifier}))
                clock.advance(timedelta(minutes=1))
                minute += 1
                if minute in restart_at:
                    break  # the process stops; a new one opens the store again
    return results
