"""The alert engine: a pure state machine over evaluations at given clock times.

Each `step(state, now, observed, config, silences)` takes the alerts one evaluation observed (a
firing alert has no `ends_at`) and returns the next state and the notifications to send:

- pending -> firing once the condition has held for `for` (measured from the alert's `startsAt`,
  so an episode found after the fact fires at once if it lasted long enough); a pending alert that
  goes away never notifies. A firing alert that is no longer observed resolves at `now`.
- Identity is the alert's fingerprint (line, subject, episode start): seeing it again is no news.
- Alerts are grouped by the `group_by` labels. A group notifies its changed alerts (new firing,
  newly resolved) after `group_wait` (first time) or `group_interval` (later), and re-sends its
  firing alerts every `repeat_interval` while nothing changes.
- A firing alert is muted while a silence matches it or while a firing alert of a higher severity
  with equal `inhibit.equal` labels exists. A muted alert is not notified; a resolution is always
  notified when its firing was.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from alerts.model import Alert, Status
from alerts.silence import FINGERPRINT_LABEL, Silence, silenced_by
from gpusteward.config.alerting import AlertEngineConfig, InhibitConfig

State = Literal["pending", "firing", "resolved"]
Reason = Literal["new", "update", "repeat"]


def utc(moment: datetime) -> datetime:
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


@dataclass(frozen=True)
class Tracked:
    alert: Alert  # as last observed (resolved by the engine when it went away)
    state: State
    since: datetime  # when the engine first saw it
    notified: Status | None = None  # the last status handed to the receivers
    muted_by: str | None = None  # "silence:<id>" or "inhibited:<fingerprint>", as of the last step
    resolved_at: datetime | None = None


@dataclass(frozen=True)
class GroupState:
    waiting_since: datetime | None = None  # a first notification is waiting for group_wait
    last_sent: datetime | None = None


@dataclass(frozen=True)
class EngineState:
    alerts: Mapping[str, Tracked] = field(default_factory=dict)
    groups: Mapping[str, GroupState] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "alerts": {fp: _tracked_to_dict(t) for fp, t in sorted(self.alerts.items())},
            "groups": {
                k: {"waiting_since": _iso(g.waiting_since), "last_sent": _iso(g.last_sent)}
                for k, g in sorted(self.groups.items())
            },
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EngineState:
        alerts = {fp: _tracked_from_dict(t) for fp, t in data.get("alerts", {}).items()}
        groups = {
            k: GroupState(_parse(g.get("waiting_since")), _parse(g.get("last_sent")))
            for k, g in data.get("groups", {}).items()
        }
        return cls(alerts, groups)


@dataclass(frozen=True)
class Notification:
    """One group's news at one evaluation; `key` is its idempotency key (per receiver: `key_for`)."""

    key: str
    group_key: str
    group_labels: dict[str, str]
    reason: Reason
    at: datetime
    alerts: tuple[Alert, ...]

    def key_for(self, receiver: str) -> str:
        return hashlib.sha256(f"{self.key}\x1f{receiver}".encode()).hexdigest()


@dataclass(frozen=True)
class Transition:
    fingerprint: str
    before: State | None  # None: first seen
    after: State | None  # None: forgotten (a pending alert that went away, or an old resolved one)
    muted_by: str | None = None


@dataclass(frozen=True)
class StepResult:
    state: EngineState
    notifications: tuple[Notification, ...]
    transitions: tuple[Transition, ...]


def group_of(labels: Mapping[str, str], group_by: Sequence[str]) -> tuple[str, dict[str, str]]:
    """Alertmanager's group key, `{}:{alertname="X", cluster="east"}`, and the group's labels."""
    chosen = {k: labels[k] for k in sorted(group_by) if k in labels}
    inner = ", ".join(f'{k}="{v}"' for k, v in chosen.items())
    return "{}:{" + inner + "}", chosen


def _observe(prev: Tracked | None, alert: Alert, now: datetime, hold_for: timedelta) -> Tracked | None:
    held = utc(alert.ends_at or now) - utc(alert.starts_at)
    long_enough = held >= hold_for
    since = prev.since if prev else now
    notified = prev.notified if prev else None
    if alert.status == "firing":
        return Tracked(alert, "firing" if long_enough else "pending", since, notified, None, None)
    if long_enough or (prev is not None and prev.state in ("firing", "resolved")):
        resolved_at = prev.resolved_at if prev and prev.resolved_at else now
        return Tracked(alert, "resolved", since, notified, None, resolved_at)
    return None  # ended before it was due to fire


def _gone(prev: Tracked, now: datetime, forget_after: timedelta) -> Tracked | None:
    """A tracked alert this evaluation did not observe."""
    if prev.state == "pending":
        return None
    if prev.state == "firing":
        ended = replace(prev.alert, status="resolved", ends_at=now)
        return replace(prev, alert=ended, state="resolved", resolved_at=now)
    if prev.resolved_at is not None and now - prev.resolved_at >= forget_after:
        return None
    return prev


def _rank(severity: str, order: Sequence[str]) -> int:
    return order.index(severity) if severity in order else len(order)


def _inhibitor(target: Alert, firing: Sequence[Alert], rule: InhibitConfig) -> str | None:
    mine = _rank(target.labels.get("severity", ""), rule.severities)
    for source in firing:
        if source.fingerprint == target.fingerprint:
            continue
        if _rank(source.labels.get("severity", ""), rule.severities) >= mine:
            continue
        if not any(k in source.labels for k in rule.equal):
            continue
        if all(source.labels.get(k) == target.labels.get(k) for k in rule.equal):
            return source.fingerprint
    return None


def _mute(alerts: dict[str, Tracked], now: datetime, config: AlertEngineConfig, silences: Sequence[Silence]) -> None:
    firing = [t.alert for t in alerts.values() if t.state == "firing"]
    for fp, t in alerts.items():
        if t.state == "pending":
            continue
        silence = silenced_by({**t.alert.labels, FINGERPRINT_LABEL: t.alert.fingerprint}, silences, now)
        if silence is not None:
            alerts[fp] = replace(t, muted_by=f"silence:{silence}")
            continue
        source = _inhibitor(t.alert, firing, config.inhibit)
        alerts[fp] = replace(t, muted_by=None if source is None else f"inhibited:{source}")


def _wanted(t: Tracked) -> Status | None:
    """The status receivers should know of, when it differs from what they were told."""
    if t.state == "firing":
        want: Status | None = None if t.muted_by else "firing"
    elif t.state == "resolved":
        told_firing = t.notified == "firing"
        want = "resolved" if told_firing or (t.notified is None and not t.muted_by) else None
    else:
        want = None
    return want if want is not None and want != t.notified else None


def _notification(
    group_key: str, labels: dict[str, str], reason: Reason, now: datetime, alerts: list[Alert]
) -> Notification:
    alerts.sort(key=lambda a: (a.status, a.labels.get("alertname", ""), a.fingerprint))
    parts = [group_key, reason, now.isoformat(), *(f"{a.fingerprint}:{a.status}" for a in alerts)]
    key = hashlib.sha256("\x1f".join(parts).encode()).hexdigest()
    return Notification(key, group_key, labels, reason, now, tuple(alerts))


def step(
    state: EngineState,
    now: datetime,
    observed: Sequence[Alert],
    config: AlertEngineConfig,
    silences: Sequence[Silence] = (),
) -> StepResult:
    """Advance the engine to `now` with what this evaluation observed."""
    now = utc(now)
    alerts: dict[str, Tracked] = {}
    transitions: list[Transition] = []
    seen = {a.fingerprint: a for a in observed}
    for fp in sorted(set(seen) | set(state.alerts)):
        prev = state.alerts.get(fp)
        if fp in seen:
            new = _observe(prev, seen[fp], now, config.for_)
        else:
            assert prev is not None
            new = _gone(prev, now, config.forget_after)
        if new is not None:
            alerts[fp] = new
        before, after = (prev.state if prev else None), (new.state if new else None)
        if before != after:
            transitions.append(Transition(fp, before, after))
    _mute(alerts, now, config, silences)

    members: dict[str, list[str]] = {}
    labels_of: dict[str, dict[str, str]] = {}
    for fp, t in alerts.items():
        key, labels = group_of(t.alert.labels, config.group_by)
        members.setdefault(key, []).append(fp)
        labels_of[key] = labels

    groups: dict[str, GroupState] = {}
    notifications: list[Notification] = []
    for key in sorted(members):
        group = state.groups.get(key, GroupState())
        changed = {fp: w for fp in members[key] if (w := _wanted(alerts[fp])) is not None}
        if changed:
            if group.last_sent is None:
                waiting = group.waiting_since or now
                ready = now - waiting >= config.group_wait
                group = GroupState(waiting, None)
            else:
                ready = now - group.last_sent >= config.group_interval
            if ready:
                out = [_as_status(alerts[fp].alert, w, now) for fp, w in changed.items()]
                reason: Reason = "new" if group.last_sent is None else "update"
                notifications.append(_notification(key, labels_of[key], reason, now, out))
                for fp, w in changed.items():
                    alerts[fp] = replace(alerts[fp], notified=w)
                group = GroupState(None, now)
        elif group.last_sent is not None and now - group.last_sent >= config.repeat_interval:
            again = [
                alerts[fp].alert
                for fp in members[key]
                if alerts[fp].notified == "firing" and alerts[fp].state == "firing" and not alerts[fp].muted_by
            ]
            if again:
                notifications.append(_notification(key, labels_of[key], "repeat", now, again))
                group = GroupState(None, now)
        groups[key] = group
    for fp, t in alerts.items():
        if t.muted_by:
            transitions.append(Transition(fp, t.state, t.state, t.muted_by))
    return StepResult(EngineState(alerts, groups), tuple(notifications), tuple(transitions))


def _as_status(alert: Alert, status: Status, now: datetime) -> Alert:
    if status == alert.status:
        return alert
    ends_at = (alert.ends_at or now) if status == "resolved" else None
    return replace(alert, status=status, ends_at=ends_at)


# -- serialisation -----------------------------------------------------------------------------


def _iso(moment: datetime | None) -> str | None:
    return None if moment is None else utc(moment).isoformat()


def _parse(text: str | None) -> datetime | None:
    return None if text is None else utc(datetime.fromisoformat(text))


def alert_to_dict(alert: Alert) -> dict[str, Any]:
    """Every field of an Alert, datetimes as ISO 8601 (for the outbox and the engine's state)."""
    return {
        "fingerprint": alert.fingerprint,
        "status": alert.status,
        "labels": dict(alert.labels),
        "annotations": dict(alert.annotations),
        "starts_at": _iso(alert.starts_at),
        "ends_at": _iso(alert.ends_at),
        "receivers": list(alert.receivers),
        "generator_url": alert.generator_url,
    }


def alert_from_dict(data: Mapping[str, Any]) -> Alert:
    starts = _parse(data["starts_at"])
    assert starts is not None
    return Alert(
        fingerprint=str(data["fingerprint"]),
        status="firing" if data["status"] == "firing" else "resolved",
        labels={str(k): str(v) for k, v in data["labels"].items()},
        annotations={str(k): str(v) for k, v in data["annotations"].items()},
        starts_at=starts,
        ends_at=_parse(data.get("ends_at")),
        receivers=tuple(data.get("receivers", ())),
        generator_url=str(data.get("generator_url", "")),
    )


def _tracked_to_dict(t: Tracked) -> dict[str, Any]:
    return {
        "alert": alert_to_dict(t.alert),
        "state": t.state,
        "since": _iso(t.since),
        "notified": t.notified,
        "muted_by": t.muted_by,
        "resolved_at": _iso(t.resolved_at),
    }


def _tracked_from_dict(data: Mapping[str, Any]) -> Tracked:
    since = _parse(data["since"])
    assert since is not None
    return Tracked(
        alert=alert_from_dict(data["alert"]),
        state=data["state"],
        since=since,
        notified=data.get("notified"),
        muted_by=data.get("muted_by"),
        resolved_at=_parse(data.get("resolved_at")),
    )
