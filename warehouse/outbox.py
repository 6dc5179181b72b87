"""The alert outbox, the alert engine's state and silences, stored in the warehouse.

`WarehouseOutbox(wh)` implements `alerts.outbox.OutboxStore` (structurally: the warehouse does not
import alerts). Timestamps go in as aware or naive UTC and come back aware UTC.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol

import duckdb

from warehouse.sql import run, scalar, transaction
from warehouse.store import Warehouse

ENGINE = "default"


class Enqueueable(Protocol):
    """What an item to store carries (alerts.outbox.Outgoing has these fields)."""

    @property
    def key(self) -> str: ...
    @property
    def receiver(self) -> str: ...
    @property
    def group_key(self) -> str: ...
    @property
    def payload(self) -> str: ...
    @property
    def created_at(self) -> datetime: ...
    @property
    def shadow(self) -> bool: ...


@dataclass(frozen=True)
class OutboxRow:
    key: str
    seq: int
    receiver: str
    group_key: str
    payload: str
    created_at: datetime
    state: str  # pending | delivered | failed | shadow
    attempts: int
    next_attempt_at: datetime
    last_error: str | None
    delivered_at: datetime | None


@dataclass(frozen=True)
class DeliveryLogRow:
    key: str
    attempt: int
    attempted_at: datetime
    outcome: str  # delivered | retry | failed
    error: str | None


@dataclass(frozen=True)
class SilenceRow:
    id: str
    matchers: list[str]
    starts_at: datetime
    ends_at: datetime
    comment: str
    created_by: str
    created_at: datetime


def _naive(moment: datetime) -> datetime:
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _aware(moment: Any) -> Any:
    return moment.replace(tzinfo=UTC) if isinstance(moment, datetime) and moment.tzinfo is None else moment


_COLUMNS = (
    "key, seq, receiver, group_key, payload, created_at, state, attempts, next_attempt_at, last_error, delivered_at"
)


def _row(values: tuple[Any, ...]) -> OutboxRow:
    return OutboxRow(*[_aware(v) for v in values])


class WarehouseOutbox:
    """The outbox in the warehouse: one transaction per commit, one per delivery outcome."""

    def __init__(self, wh: Warehouse, *, engine: str = ENGINE) -> None:
        if wh.read_only:
            raise ValueError(f"{wh.path}: the outbox needs a writable warehouse")
        self._wh = wh
        self._engine = engine

    def commit(self, items: Sequence[Enqueueable], engine_state: str | None) -> int:
        con = self._wh.connection
        with transaction(con):
            before = int(scalar(con, "SELECT count(*) FROM alert_outbox"))
            insert_items(con, items)
            new = int(scalar(con, "SELECT count(*) FROM alert_outbox")) - before
            if engine_state is not None:
                run(
                    con,
                    "INSERT OR REPLACE INTO alert_engine_state VALUES (?, ?, now()::TIMESTAMP)",
                    [self._engine, engine_state],
                )
        return new

    def engine_state(self) -> str | None:
        return engine_state(self._wh, self._engine)

    def pending(self, limit: int) -> list[OutboxRow]:
        rows = run(
            self._wh.connection,
            f"SELECT {_COLUMNS} FROM alert_outbox WHERE state = 'pending' ORDER BY seq LIMIT ?",  # noqa: S608
            [limit],
        )
        return [_row(r) for r in rows]

    def mark_delivered(self, key: str, at: datetime) -> None:
        self._outcome(key, at, "delivered", None, None)

    def mark_failed(self, key: str, at: datetime, error: str, retry_at: datetime | None) -> None:
        self._outcome(key, at, "retry" if retry_at is not None else "failed", error, retry_at)

    def _outcome(self, key: str, at: datetime, outcome: str, error: str | None, retry_at: datetime | None) -> None:
        con = self._wh.connection
        when = _naive(at)
        with transaction(con):
            attempt = int(scalar(con, "SELECT attempts + 1 FROM alert_outbox WHERE key = ?", [key]))
            if outcome == "delivered":
                run(
                    con,
                    "UPDATE alert_outbox SET state = 'delivered', attempts = ?, delivered_at = ?, last_error = NULL"
                    " WHERE key = ?",
                    [attempt, when, key],
                )
            else:
                state = "pending" if retry_at is not None else "failed"
                nxt = _naive(retry_at) if retry_at is not None else when
                run(
                    con,
                    "UPDATE alert_outbox SET state = ?, attempts = ?, next_attempt_at = ?, last_error = ?"
                    " WHERE key = ?",
                    [state, attempt, nxt, error, key],
                )
            run(con, "INSERT INTO alert_delivery_log VALUES (?, ?, ?, ?, ?)", [key, attempt, when, outcome, error])


def insert_items(con: duckdb.DuckDBPyConnection, items: Sequence[Enqueueable]) -> None:
    """Add the items whose key is new (inside the caller's transaction): stored before they are sent."""
    for it in items:
        state = "shadow" if it.shadow else "pending"
        created = _naive(it.created_at)
        run(
            con,
            "INSERT OR IGNORE INTO alert_outbox (key, receiver, group_key, payload, created_at, state,"
            " next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [it.key, it.receiver, it.group_key, it.payload, created, state, created],
        )


def engine_state(wh: Warehouse, engine: str = ENGINE) -> str | None:
    """The alert engine's last committed state (JSON), or None."""
    found = scalar(wh.connection, "SELECT body FROM alert_engine_state WHERE name = ?", [engine])
    return None if found is None else str(found)


def outbox_items(wh: Warehouse, *, state: str | None = None, limit: int = 1000) -> list[OutboxRow]:
    """Outbox items, newest first; only those in `state` when given."""
    where, params = ("WHERE state = ?", [state]) if state else ("", [])
    rows = run(
        wh.connection,
        f"SELECT {_COLUMNS} FROM alert_outbox {where} ORDER BY seq DESC LIMIT ?",  # noqa: S608 - fixed text
        [*params, limit],
    )
    return [_row(r) for r in rows]


def outbox_counts(wh: Warehouse) -> dict[str, int]:
    """Items per state."""
    return {str(s): int(n) for s, n in run(wh.connection, "SELECT state, count(*) FROM alert_outbox GROUP BY state")}


def delivery_log(wh: Warehouse, key: str | None = None) -> list[DeliveryLogRow]:
    where, params = ("WHERE key = ?", [key]) if key else ("", [])
    rows = run(wh.connection, f"SELECT * FROM alert_delivery_log {where} ORDER BY attempted_at, key, attempt", params)  # noqa: S608
    return [DeliveryLogRow(*[_aware(v) for v in r]) for r in rows]


def requeue_failed(wh: Warehouse, at: datetime) -> int:
    """Put every failed item back in the queue, due at `at` (after fixing a receiver's config)."""
    con = wh.connection
    n = int(scalar(con, "SELECT count(*) FROM alert_outbox WHERE state = 'failed'"))
    run(con, "UPDATE alert_outbox SET state = 'pending', next_attempt_at = ? WHERE state = 'failed'", [_naive(at)])
    return n


def add_silence(
    wh: Warehouse,
    silence_id: str,
    matchers: Sequence[str],
    starts_at: datetime,
    ends_at: datetime,
    *,
    comment: str = "",
    created_by: str = "",
    created_at: datetime,
) -> bool:
    """Store a silence; False when one with this id exists already."""
    con = wh.connection
    if scalar(con, "SELECT count(*) FROM alert_silences WHERE id = ?", [silence_id]):
        return False
    run(
        con,
        "INSERT INTO alert_silences VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            silence_id,
            json.dumps(list(matchers)),
            _naive(starts_at),
            _naive(ends_at),
            comment,
            created_by,
            _naive(created_at),
        ],
    )
    return True


def silences(wh: Warehouse, *, active_at: datetime | None = None) -> list[SilenceRow]:
    """Every stored silence, or only those active at `active_at`, by start."""
    where, params = ("WHERE starts_at <= ? AND ends_at > ?", [_naive(active_at)] * 2) if active_at else ("", [])
    rows = run(wh.connection, f"SELECT * FROM alert_silences {where} ORDER BY starts_at, id", params)  # noqa: S608
    return [
        SilenceRow(
            r[0], [str(m) for m in json.loads(r[1])], _aware(r[2]), _aware(r[3]), r[4] or "", r[5] or "", _aware(r[6])
        )
        for r in rows
    ]


def expire_silence(wh: Warehouse, silence_id: str, at: datetime) -> bool:
    """End a silence at `at` (if it ends later); False when there is no such silence."""
    con = wh.connection
    if not scalar(con, "SELECT count(*) FROM alert_silences WHERE id = ?", [silence_id]):
        return False
    run(con, "UPDATE alert_silences SET ends_at = least(ends_at, ?) WHERE id = ?", [_naive(at), silence_id])
    return True
