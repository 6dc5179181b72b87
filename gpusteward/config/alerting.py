# ruff: noqa: RUF009  # opt()/req() return dataclass fields carrying help text, as in schema.py
"""Settings of the alert engine, its silences and the delivery outbox.

Defaults in code, one line of help per field (the same `opt`/`req` helpers as schema.py), so the
loader builds them like any other section once Config carries them (`alerts.engine`,
`alerts.outbox`, `alerts.silences`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Literal

from gpusteward.config.fields import opt, req


@dataclass(frozen=True)
class InhibitConfig:
    severities: list[str] = opt(
        ["critical", "warning", "info"], "severities from highest to lowest; a firing alert mutes lower ones"
    )
    equal: list[str] = opt(
        ["cluster", "subject"], "labels that must be equal (and present on the firing alert) for it to mute another"
    )


@dataclass(frozen=True)
class AlertEngineConfig:
    mode: Literal["live", "shadow"] = opt("live", "live: send notifications; shadow: evaluate and record only")
    for_: timedelta = opt(timedelta(0), "a condition must hold this long before it fires (key: for), besides a line's")
    group_by: list[str] = opt(["alertname", "cluster", "subject"], "labels whose values make up a notification group")
    group_wait: timedelta = opt(timedelta(0), "wait before the first notification of a new group, to batch its alerts")
    group_interval: timedelta = opt(timedelta(minutes=1), "least time between two notifications of one group")
    repeat_interval: timedelta = opt(timedelta(hours=4), "re-send a group's firing alerts this often while unchanged")
    forget_after: timedelta = opt(
        timedelta(days=40), "keep a resolved alert's state this long, so re-evaluating the month does not repeat it"
    )
    inhibit: InhibitConfig = opt(InhibitConfig(), "inhibition of lower severities while a higher one fires")


@dataclass(frozen=True)
class OutboxConfig:
    backoff_initial: timedelta = opt(timedelta(seconds=30), "first retry delay after a transient delivery failure")
    backoff_max: timedelta = opt(timedelta(minutes=10), "longest retry delay; retries go on until delivered")
    backoff_factor: float = opt(2.0, "each failed attempt multiplies the delay by this")
    batch: int = opt(100, "most notifications one delivery pass sends")


@dataclass(frozen=True)
class SilenceConfig:
    matchers: list[str] = req('label matchers, all of which must hold: name="v", name!="v", name=~"re", name!~"re"')
    ends_at: datetime = req("the silence expires at this time (TOML datetime, UTC when no offset)")
    starts_at: datetime | None = opt(None, "the silence starts at this time; unset means at once")
    comment: str = opt("", "why the alerts are silenced")
    created_by: str = opt("", "who silenced them")
