"""The delivery outbox: notifications are stored before they are sent, and sent until delivered.

`OutboxStore` is the storage extension point (the warehouse implements it in
`warehouse.outbox.WarehouseOutbox`; `MemoryOutbox` is for tests and dry runs). `tick` is one turn of
the service loop: step the engine, store its notifications and its new state in one commit, then
deliver what is due.

- Each (notification, receiver) is one item, keyed by an idempotency key; storing a key twice is a
  no-op, so re-running an evaluation after a crash adds nothing.
- A transient failure retries with exponential backoff, without end: nothing is lost while a
  receiver is down. A permanent failure (a 4xx, a bad config) parks the item as `failed`.
- Items of one receiver go out in order: while its oldest item waits for a retry, the later ones
  wait too, so a resolution never overtakes its firing.
- In shadow mode items are stored as `shadow` and never sent: the noise can be measured first.
- Delivery is at least once: a crash between a receiver's 200 and the store's commit sends that
  item again on restart. Every other path delivers each item exactly once.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Protocol

from alerts.engine import EngineState, Notification, StepResult, alert_from_dict, alert_to_dict, step, utc
from alerts.model import Alert
from alerts.notify import Notifier
from alerts.silence import Silence
from gpusteward.config.alerting import AlertEngineConfig, OutboxConfig
from gpusteward.errors import PermanentError, TransientError


@dataclass(frozen=True)
class Outgoing:
    """A notification for one receiver, ready to be stored."""

    key: str
    receiver: str
    group_key: str
    payload: str  # JSON: {"reason", "at", "alerts": [...]}
    created_at: datetime
    shadow: bool = False


class OutboxItem(Protocol):
    """A stored item the store hands back for delivery."""

    @property
    def key(self) -> str: ...
    @property
    def receiver(self) -> str: ...
    @property
    def payload(self) -> str: ...
    @property
    def attempts(self) -> int: ...
    @property
    def next_attempt_at(self) -> datetime: ...


class OutboxStore(Protocol):
    """Durable storage of the outbox and the engine's state."""

    def commit(self, items: Sequence[Outgoing], engine_state: str | None) -> int:
        """Add the items whose key is new and replace the engine's state, atomically; return how many were new."""
        ...

    def engine_state(self) -> str | None:
        """The engine state last committed (JSON), or None."""
        ...

    def pending(self, limit: int) -> Sequence[OutboxItem]:
        """Items still to deliver, oldest first (creation order), due or not."""
        ...

    def mark_delivered(self, key: str, at: datetime) -> None:
        """Record a successful attempt."""
        ...

    def mark_failed(self, key: str, at: datetime, error: str, retry_at: datetime | None) -> None:
        """Record a failed attempt: retry at `retry_at`, or give up when it is None."""
        ...


@dataclass(frozen=True)
class Backoff:
    initial: timedelta = timedelta(seconds=30)
    maximum: timedelta = timedelta(minutes=10)
    factor: float = 2.0

    @classmethod
    def from_config(cls, config: OutboxConfig) -> Backoff:
        return cls(config.backoff_initial, config.backoff_max, config.backoff_factor)

    def delay(self, attempts: int) -> timedelta:
        """The wait after the `attempts`-th failed attempt (1, 2, ...)."""
        seconds = self.initial.total_seconds() * self.factor ** max(attempts - 1, 0)
        return min(timedelta(seconds=seconds), self.maximum)


def payload(notification: Notification, alerts: Sequence[Alert]) -> str:
    body: dict[str, Any] = {
        "reason": notification.reason,
        "at": notification.at.isoformat(),
        "group_key": notification.group_key,
        "alerts": [alert_to_dict(a) for a in alerts],
    }
    return json.dumps(body, ensure_ascii=False, sort_keys=True)


def alerts_of(item_payload: str) -> list[Alert]:
    return [alert_from_dict(a) for a in json.loads(item_payload)["alerts"]]


def outgoing(notifications: Sequence[Notification], receivers: Sequence[str], *, shadow: bool) -> list[Outgoing]:
    """One item per notification and receiver that any of its alerts routes to."""
    items: list[Outgoing] = []
    for n in notifications:
        for receiver in receivers:
            mine = [a for a in n.alerts if not a.receivers or receiver in a.receivers]
            if mine:
                items.append(Outgoing(n.key_for(receiver), receiver, n.group_key, payload(n, mine), n.at, shadow))
    return items


@dataclass(frozen=True)
class Attempt:
    key: str
    receiver: str
    alerts: int
    error: str | None = None
    retry_at: datetime | None = None  # set for a transient failure


@dataclass(frozen=True)
class DeliveryPass:
    attempts: tuple[Attempt, ...]
    waiting: int  # items not due yet (backing off, or queued behind one that is)

    @property
    def delivered(self) -> int:
        return sum(a.error is None for a in self.attempts)

    @property
    def failed(self) -> list[Attempt]:
        return [a for a in self.attempts if a.error is not None]


def deliver_due(
    store: OutboxStore,
    notifiers: Mapping[str, Notifier],
    now: datetime,
    *,
    backoff: Backoff | None = None,
    limit: int = 100,
) -> DeliveryPass:
    """Send every due item, oldest first, one receiver's items in order."""
    policy = backoff or Backoff()
    now = utc(now)
    blocked: set[str] = set()
    attempts: list[Attempt] = []
    waiting = 0
    for item in store.pending(limit):
        if item.receiver in blocked or utc(item.next_attempt_at) > now:
            blocked.add(item.receiver)
            waiting += 1
            continue
        alerts = alerts_of(item.payload)
        notifier = notifiers.get(item.receiver)
        try:
            if notifier is None:
                # The receiver is not configured (or could not be built): keep the item, it may come back.
                raise TransientError(f"receiver {item.receiver!r} is not configured")
            notifier.send(alerts)
        except TransientError as exc:
            retry_at = now + policy.delay(item.attempts + 1)
            store.mark_failed(item.key, now, str(exc), retry_at)
            attempts.append(Attempt(item.key, item.receiver, len(alerts), str(exc), retry_at))
            blocked.add(item.receiver)
        except PermanentError as exc:
            store.mark_failed(item.key, now, str(exc), None)
            attempts.append(Attempt(item.key, item.receiver, len(alerts), str(exc)))
        else:
            store.mark_delivered(item.key, now)
            attempts.append(Attempt(item.key, item.receiver, len(alerts)))
    return DeliveryPass(tuple(attempts), waiting)


@dataclass(frozen=True)
class TickResult:
    step: StepResult
    stored: int  # new outbox items
    delivery: DeliveryPass


def tick(
    store: OutboxStore,
    now: datetime,
    observed: Sequence[Alert],
    *,
    engine: AlertEngineConfig,
    notifiers: Mapping[str, Notifier],
    silences: Sequence[Silence] = (),
    outbox: OutboxConfig | None = None,
    receivers: Sequence[str] | None = None,
) -> TickResult:
    """One turn of the service loop: evaluate the engine, store its news, deliver what is due.

    `receivers` are the configured receiver names (default: those in `notifiers`). A receiver whose
    notifier could not be built still gets its items; they wait until it can be.
    """
    saved = store.engine_state()
    state = EngineState.from_dict(json.loads(saved)) if saved else EngineState()
    result = step(state, now, observed, engine, silences)
    shadow = engine.mode == "shadow"
    names = sorted(notifiers) if receivers is None else list(receivers)
    items = outgoing(result.notifications, names, shadow=shadow)
    stored = store.commit(items, json.dumps(result.state.to_dict(), sort_keys=True))
    settings = outbox or OutboxConfig()
    delivery = deliver_due(store, notifiers, now, backoff=Backoff.from_config(settings), limit=settings.batch)
    return TickResult(result, stored, delivery)


@dataclass
class MemoryItem:
    key: str
    receiver: str
    payload: str
    created_at: datetime
    next_attempt_at: datetime
    state: str = "pending"  # pending | delivered | failed | shadow
    attempts: int = 0
    last_error: str | None = None


class MemoryOutbox:
    """An OutboxStore in memory: for tests and for `alerts test` dry runs."""

    def __init__(self) -> None:
        self.items: dict[str, MemoryItem] = {}
        self.log: list[tuple[str, datetime, str, str | None]] = []  # key, at, outcome, error
        self._state: str | None = None

    def commit(self, items: Sequence[Outgoing], engine_state: str | None) -> int:
        new = 0
        for it in items:
            if it.key in self.items:
                continue
            state = "shadow" if it.shadow else "pending"
            self.items[it.key] = MemoryItem(it.key, it.receiver, it.payload, it.created_at, it.created_at, state)
            new += 1
        if engine_state is not None:
            self._state = engine_state
        return new

    def engine_state(self) -> str | None:
        return self._state

    def pending(self, limit: int) -> Sequence[OutboxItem]:
        return [i for i in self.items.values() if i.state == "pending"][:limit]

    def mark_delivered(self, key: str, at: datetime) -> None:
        item = self.items[key]
        item.state, item.attempts = "delivered", item.attempts + 1
        self.log.append((key, at, "delivered", None))

    def mark_failed(self, key: str, at: datetime, error: str, retry_at: datetime | None) -> None:
        item = self.items[key]
        item.attempts += 1
        item.last_error = error
        if retry_at is None:
            item.state = "failed"
        else:
            item.next_attempt_at = retry_at
        self.log.append((key, at, "retry" if retry_at else "failed", error))
