"""What the overview page shows, and the loader that reads it from the warehouse read-only."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, Protocol

import polars as pl

from gpusteward.config import load_config
from gpusteward.config.schema import Config
from gpusteward.domain import Month
from sla.outputs import MonthOutputs
from warehouse import open_warehouse


@dataclass(frozen=True)
class OverviewData:
    """One month as the overview page shows it.

    status: the warehouse's status (`tables` -> {name: {rows, min_ts, max_ts}}, `completeness` list).
    alerts: the month's firing alerts, one dict each (fingerprint, line, subject, severity, starts_at, summary).
    data_age: how old the newest stored row was when the data was loaded; None when unknown.
    """

    month: Month
    outputs: MonthOutputs
    status: Mapping[str, Any]
    alerts: list[dict[str, Any]]
    data_age: timedelta | None
    data_as_of: datetime | None = None  # naive UTC
    months: tuple[Month, ...] = ()  # months with outputs, newest last
    team_names: Mapping[str, str] = field(default_factory=dict)
    zone: str = "UTC"  # the pool's time zone, in which moments are shown
    pool_gpus: int | None = None  # GPUs configured in the pool; None when the config does not say
    fallbacks: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    """A breach's stored fallback -> that text in each language the config gives it (per-language fallbacks)."""


class NoMonthError(LookupError):
    """The warehouse holds no evaluated month (or not the one asked for)."""


class WarehouseReader(Protocol):
    """The read-only warehouse API the overview uses."""

    def months(self) -> list[Month]: ...
    def month_outputs(self, month: Month) -> MonthOutputs: ...
    def status(self) -> dict[str, Any]: ...
    def alerts(self, month: Month | None = None) -> pl.DataFrame: ...


Opener = Callable[..., AbstractContextManager[WarehouseReader]]


def _naive_utc(moment: datetime) -> datetime:
    """Naive UTC; a naive input is taken to be UTC already."""
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _timestamp(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return _naive_utc(value)
    if isinstance(value, str) and value:
        try:
            return _naive_utc(datetime.fromisoformat(value))
        except ValueError:
            return None
    return None


def newest_row(status: Mapping[str, Any]) -> datetime | None:
    """The latest `max_ts` over the warehouse's tables (naive UTC), or None when none has one."""
    tables = status.get("tables")
    if not isinstance(tables, Mapping):
        return None
    stamps = [
        ts for entry in tables.values() if isinstance(entry, Mapping)
        if (ts := _timestamp(entry.get("max_ts"))) is not None
    ]
    return max(stamps, default=None)


def firing_alerts(alerts: pl.DataFrame) -> list[dict[str, Any]]:
    if alerts.is_empty() or "status" not in alerts.columns:
        return []
    firing = alerts.filter(pl.col("status") == "firing")
    order = [c for c in ("starts_at", "fingerprint") if c in firing.columns]
    return firing.sort(order, nulls_last=True).to_dicts() if order else firing.to_dicts()


def team_names(config: Config) -> dict[str, str]:
    return {key: team.display_name or key for key, team in config.teams.items()}


def pool_gpus(config: Config) -> int | None:
    """Configured GPUs of the pool; None when any cluster leaves it to telemetry (gpus = 0)."""
    if not config.clusters or any(c.gpus <= 0 for c in config.clusters):
        return None
    return sum(c.gpus for c in config.clusters)


def fallback_texts(config: Config) -> dict[str, dict[str, str]]:
    """Every configured protection line's fallback, by its default text, in the languages given."""
    lines = [line for section in vars(config.protection).values() if isinstance(section, list) for line in section]
    return {str(line.fallback): dict(line.fallback.translations) for line in lines
            if hasattr(line, "fallback") and line.fallback.translations}


def load_overview(
    db_path: str | Path,
    config_path: str | Path | None,
    month: Month | None = None,
    *,
    now: datetime | None = None,
    opener: Opener = open_warehouse,
) -> OverviewData:
    """Read one month (the newest with outputs when `month` is None) from the warehouse, read-only."""
    config = load_config(config_path) if config_path is not None else Config()
    with opener(db_path, read_only=True) as wh:
        months = list(wh.months())
        if not months:
            raise NoMonthError(f"{db_path} holds no evaluated month yet; evaluate a month first")
        chosen = month or months[-1]
        if chosen not in months:
            known = ", ".join(str(m) for m in months)
            raise NoMonthError(f"{db_path} holds no outputs for {chosen}; months with outputs: {known}")
        outputs = wh.month_outputs(chosen)
        status = wh.status()
        alerts = firing_alerts(wh.alerts(chosen))
    as_of = newest_row(status)
    current = _naive_utc(now or datetime.now(UTC))
    return OverviewData(
        month=chosen,
        outputs=outputs,
        status=status,
        alerts=alerts,
        data_age=current - as_of if as_of is not None else None,
        data_as_of=as_of,
        months=tuple(months),
        team_names=team_names(config),
        pool_gpus=pool_gpus(config),
        fallbacks=fallback_texts(config),
    )
