"""The outbox in the warehouse: idempotent commits, the delivery log, silences, and restarts."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

from alerts.outbox import OutboxStore, Outgoing
from tests.alerts.outage import T0, expected, received, run_outage
from tests.alerts.server import recording_server
from warehouse import open_warehouse
from warehouse.outbox import (
    WarehouseOutbox,
    add_silence,
    delivery_log,
    expire_silence,
    outbox_counts,
    outbox_items,
    requeue_failed,
    silences,
)


def _item(key: str, receiver: str = "ops", *, shadow: bool = False) -> Outgoing:
    return Outgoing(key, receiver, "{}:{}", '{"alerts": []}', T0, shadow)


def test_commit_is_idempotent_and_saves_engine_state(db_path: Path) -> None:
    with open_warehouse(db_path) as wh:
        box = WarehouseOutbox(wh)
        assert box.engine_state() is None
        assert box.commit([_item("a"), _item("b"), _item("s", shadow=True)], '{"alerts": {}}') == 3
        assert box.commit([_item("a"), _item("c")], '{"alerts": {"x": 1}}') == 1
    with open_warehouse(db_path) as wh:
        box = WarehouseOutbox(wh)
        assert box.engine_state() == '{"alerts": {"x": 1}}'
        assert [i.key for i in box.pending(10)] == ["a", "b", "c"]  # creation order, shadow never pending
        assert outbox_counts(wh) == {"pending": 3, "shadow": 1}


def test_outcomes_update_the_item_and_the_log(db_path: Path) -> None:
    with open_warehouse(db_path) as wh:
        box = WarehouseOutbox(wh)
        box.commit([_item("a"), _item("b")], None)
        box.mark_failed("a", T0, "503", T0 + timedelta(seconds=30))
        box.mark_delivered("a", T0 + timedelta(seconds=30))
        box.mark_failed("b", T0, "400", None)
        (a,) = outbox_items(wh, state="delivered")
        assert (a.key, a.attempts, a.delivered_at, a.last_error) == ("a", 2, T0 + timedelta(seconds=30), None)
        (b,) = outbox_items(wh, state="failed")
        assert (b.attempts, b.last_error) == (1, "400")
        log = delivery_log(wh)
        assert [(e.key, e.attempt, e.outcome) for e in log] == [
            ("a", 1, "retry"), ("b", 1, "failed"), ("a", 2, "delivered"),
        ]
        assert requeue_failed(wh, T0 + timedelta(hours=1)) == 1
        assert [i.key for i in box.pending(10)] == ["b"]


def test_silences_are_stored_and_expire(db_path: Path) -> None:
    with open_warehouse(db_path) as wh:
        assert add_silence(wh, "s1", ['cluster="east"'], T0, T0 + timedelta(hours=2), comment="drain", created_at=T0)
        assert not add_silence(wh, "s1", ['cluster="east"'], T0, T0 + timedelta(hours=2), created_at=T0)
        (s,) = silences(wh, active_at=T0 + timedelta(hours=1))
        assert (s.matchers, s.comment, s.ends_at) == (['cluster="east"'], "drain", T0 + timedelta(hours=2))
        assert expire_silence(wh, "s1", T0 + timedelta(minutes=30))
        assert silences(wh, active_at=T0 + timedelta(hours=1)) == []
        assert not expire_silence(wh, "nope", T0)


def test_outage_and_restarts_deliver_every_alert_exactly_once(db_path: Path) -> None:
    """The receiver is down for the first hour and the process restarts twice, once mid-outage."""

    @contextmanager
    def reopen() -> Iterator[OutboxStore]:
        with open_warehouse(db_path) as wh:
            yield WarehouseOutbox(wh)

    with recording_server() as srv:
        run_outage(srv, reopen, minutes=180, down=range(60), restart_at=(30, 100))
    got = received(srv)
    assert set(got) == expected()
    assert all(n == 1 for n in got.values()), got
    with open_warehouse(db_path) as wh:
        assert set(outbox_counts(wh)) == {"delivered"}
        assert any(e.outcome == "retry" for e in delivery_log(wh))


def test_rerunning_an_evaluation_after_a_crash_adds_nothing(db_path: Path) -> None:
    """A crash after the commit and before delivery: the same tick again stores no duplicate."""
    from alerts.outbox import tick
    from tests.alerts.outage import ENGINE, observed

    with open_warehouse(db_path) as wh:
        box = WarehouseOutbox(wh)
        first = tick(box, T0 + timedelta(minutes=10), observed(10), engine=ENGINE, notifiers={}, receivers=["ops"])
        assert first.stored == 2
        state = box.engine_state()
        # The same evaluation run again from the state before it (as if the state write were lost):
        box.commit([], '{"alerts": {}, "groups": {}}')
        again = tick(box, T0 + timedelta(minutes=10), observed(10), engine=ENGINE, notifiers={}, receivers=["ops"])
        assert again.stored == 0
        assert box.engine_state() == state
