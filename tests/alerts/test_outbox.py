"""The outbox in memory: retries with backoff, order per receiver, shadow mode, exactly once."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta

from alerts.outbox import Backoff, MemoryOutbox, OutboxStore, tick
from alerts.webhook import WebhookNotifier
from gpusteward.config.alerting import AlertEngineConfig
from tests.alerts.outage import T0, expected, observed, received, run_outage
from tests.alerts.server import recording_server


def test_backoff_doubles_up_to_the_cap() -> None:
    b = Backoff(timedelta(seconds=30), timedelta(minutes=10), 2.0)
    assert [b.delay(n).total_seconds() for n in range(1, 8)] == [30, 60, 120, 240, 480, 600, 600]


def test_receiver_down_for_an_hour_then_every_alert_arrives_exactly_once() -> None:
    store = MemoryOutbox()

    @contextmanager
    def same() -> Iterator[OutboxStore]:
        yield store

    with recording_server() as srv:
        results = run_outage(srv, same)
    got = received(srv)
    assert set(got) == expected()
    assert all(n == 1 for n in got.values()), got
    assert all(item.state == "delivered" for item in store.items.values())
    # The hour of outage cost a bounded number of attempts per item (exponential backoff, capped).
    retries = [e for e in store.log if e[2] == "retry"]
    assert retries
    first_key = store.log[0][0]
    tries_of_first = [e for e in store.log if e[0] == first_key]
    assert 5 <= len(tries_of_first) <= 15, tries_of_first
    # Order per receiver: nothing resolved arrived before its firing.
    order = [(a, s) for raw in srv.bodies for a, s in _pairs(raw)]
    for fp, status in order:
        if status == "resolved":
            assert order.index((fp, "firing")) < order.index((fp, "resolved"))
    assert sum(r.stored for r in results) == len(store.items)


def _pairs(raw: bytes) -> list[tuple[str, str]]:
    return [(a["fingerprint"], a["status"]) for a in json.loads(raw)["alerts"]]


def test_shadow_mode_records_and_never_sends() -> None:
    store = MemoryOutbox()
    engine = AlertEngineConfig(mode="shadow", group_interval=timedelta(0))
    with recording_server() as srv:
        notifier = WebhookNotifier("ops", srv.url, timeout_s=5)
        for minute in range(0, 120, 10):
            tick(store, T0 + timedelta(minutes=minute), observed(minute), engine=engine, notifiers={"ops": notifier})
    assert srv.bodies == []
    assert store.items
    assert {i.state for i in store.items.values()} == {"shadow"}


def test_permanent_failure_parks_the_item_and_others_go_on() -> None:
    store = MemoryOutbox()
    engine = AlertEngineConfig(group_interval=timedelta(0))
    with recording_server() as bad, recording_server() as good:
        bad.status = 400
        notifiers = {"bad": WebhookNotifier("bad", bad.url), "good": WebhookNotifier("good", good.url)}
        result = tick(store, T0 + timedelta(minutes=10), observed(10), engine=engine, notifiers=notifiers)
    # Two groups (east, south) for two receivers.
    assert result.delivery.delivered == 2
    assert [(f.receiver, f.retry_at) for f in result.delivery.failed] == [("bad", None), ("bad", None)]
    assert sorted(i.state for i in store.items.values()) == ["delivered", "delivered", "failed", "failed"]


def test_unconfigured_receiver_keeps_its_items() -> None:
    store = MemoryOutbox()
    engine = AlertEngineConfig(group_interval=timedelta(0))
    with recording_server() as srv:
        notifier = WebhookNotifier("ops", srv.url)
        tick(store, T0 + timedelta(minutes=10), observed(10), engine=engine, notifiers={"ops": notifier})
        # "ops" disappears from the config for a while: its new items wait instead of being dropped.
        later = tick(store, T0 + timedelta(minutes=40), observed(40), engine=engine, notifiers={}, receivers=["ops"])
        assert later.stored == 2  # south resolved, west started firing
        assert "not configured" in (later.delivery.failed[0].error or "")
        back = tick(store, T0 + timedelta(minutes=41), observed(41), engine=engine, notifiers={"ops": notifier})
        assert back.delivery.delivered == 2
    assert {i.state for i in store.items.values()} == {"delivered"}
