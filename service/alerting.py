"""The alert path of the service: breach alerts -> engine -> outbox in the warehouse -> receivers."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from alerts.model import Alert
from alerts.outbox import TickResult
from alerts.silence import Silence, make_silence, parse_matcher
from gpusteward.config import Config
from gpusteward.config.alerting import AlertEngineConfig, OutboxConfig, SilenceConfig
from warehouse import Warehouse


def engine_config(config: Config) -> AlertEngineConfig:
    """`alerts.engine` from the config once it carries one; the defaults until then."""
    found = getattr(config.alerts, "engine", None)
    return found if isinstance(found, AlertEngineConfig) else AlertEngineConfig()


def outbox_config(config: Config) -> OutboxConfig:
    found = getattr(config.alerts, "outbox", None)
    return found if isinstance(found, OutboxConfig) else OutboxConfig()


def configured_silences(config: Config, now: datetime) -> list[Silence]:
    """`[[alerts.silences]]` from the config once it carries them."""
    found: Sequence[Any] = getattr(config.alerts, "silences", ()) or ()
    out = []
    for s in found:
        if isinstance(s, SilenceConfig):
            out.append(
                make_silence(s.matchers, s.starts_at or now, s.ends_at, comment=s.comment, created_by=s.created_by)
            )
    return out


def stored_silences(wh: Warehouse, now: datetime | None = None) -> list[Silence]:
    from warehouse.outbox import silences

    return [
        Silence(r.id, tuple(parse_matcher(m) for m in r.matchers), r.starts_at, r.ends_at, r.comment, r.created_by)
        for r in silences(wh, active_at=now)
    ]


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
        engine=engine_config(config),
        notifiers={n.name: n for n in notifiers},
        silences=[*configured_silences(config, now), *stored_silences(wh, now)],
        outbox=outbox_config(config),
        receivers=[r.name for r in config.alerts.receivers],
    )
