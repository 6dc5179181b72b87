"""The alert path of the service: breach alerts -> engine -> outbox in the warehouse -> receivers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import polars as pl

from alerts.model import Alert
from alerts.outbox import TickResult
from alerts.silence import FINGERPRINT_LABEL, Matcher, Silence, make_silence, parse_matcher
from gpusteward.config import Config
from warehouse import Warehouse


def configured_silences(config: Config, now: datetime) -> list[Silence]:
    """`[[alerts.silences]]` of the config as engine silences."""
    return [
        make_silence(s.matchers, s.starts_at or now, s.ends_at, comment=s.comment, created_by=s.created_by)
        for s in config.alerts.silences
    ]


def stored_silences(wh: Warehouse, now: datetime | None = None) -> list[Silence]:
    """Silences from `gpusteward alerts silence` (label matchers) and from the control API (one
    alert each, by fingerprint)."""
    from warehouse.control import alert_states
    from warehouse.outbox import silences

    found = [
        Silence(r.id, tuple(parse_matcher(m) for m in r.matchers), r.starts_at, r.ends_at, r.comment, r.created_by)
        for r in silences(wh, active_at=now)
    ]
    for row in alert_states(wh).filter(pl.col("silenced_until").is_not_null()).iter_rows(named=True):
        until = row["silenced_until"].replace(tzinfo=UTC)
        if now is None or until > now:
            found.append(
                make_silence(
                    [Matcher(FINGERPRINT_LABEL, "=", row["fingerprint"])],
                    datetime.min.replace(tzinfo=UTC),
                    until,
                    comment="silenced through the control API",
                    created_by=row["silenced_by"] or "",
                )
            )
    return found


def run_alert_tick(wh: Warehouse, config: Config, alerts: Sequence[Alert], now: datetime) -> TickResult:
    """One evaluation's alerts through the engine and the warehouse outbox to the receivers."""
    from alerts.notify import build_notifiers
    from alerts.outbox import tick
    from warehouse.outbox import WarehouseOutbox

    notifiers, _broken = build_notifiers(config)  # a broken receiver keeps its items until it is fixed
    return tick(
        WarehouseOutbox(wh),
        now,
        alerts,
        engine=config.alerts.engine,
        notifiers={n.name: n for n in notifiers},
        silences=[*configured_silences(config, now), *stored_silences(wh, now)],
        outbox=config.alerts.outbox,
        receivers=[r.name for r in config.alerts.receivers],
    )
