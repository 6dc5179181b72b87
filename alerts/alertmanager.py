"""Alertmanager notifier: POSTs alerts to Alertmanager's v2 API (`/api/v2/alerts`).

Teams keep their own routing, grouping and silences in Alertmanager. Two things differ from a
direct receiver:

- Alertmanager identifies an alert by its labels. Two episodes of one line on one subject would
  merge, so each alert carries the label `episode` (the first 16 hex digits of its fingerprint).
- A firing alert expires in Alertmanager unless it is posted again: it is sent with
  `endsAt = now + firing_ttl`, and the engine's `repeat_interval` must be shorter than that TTL.
  A resolved alert is sent with its real `endsAt`, which resolves it at once.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

import httpx

from alerts.http import post, redact
from alerts.model import Alert, rfc3339
from gpusteward.clock import Clock, SystemClock

EPISODE_LABEL = "episode"


def postable(alert: Alert, clock: Clock, firing_ttl: timedelta) -> dict[str, Any]:
    """One alert as Alertmanager's v2 PostableAlert."""
    labels = dict(sorted({**alert.labels, EPISODE_LABEL: alert.fingerprint[:16]}.items()))
    body: dict[str, Any] = {
        "labels": labels,
        "annotations": dict(sorted(alert.annotations.items())),
        "startsAt": rfc3339(alert.starts_at),
    }
    if alert.status == "resolved":
        body["endsAt"] = rfc3339(alert.ends_at or clock.now())
    elif firing_ttl > timedelta(0):
        body["endsAt"] = rfc3339(clock.now() + firing_ttl)
    if alert.generator_url:
        body["generatorURL"] = alert.generator_url
    return body


class AlertmanagerNotifier:
    def __init__(
        self,
        name: str,
        url: str,
        *,
        token: str | None = None,
        timeout_s: float = 10.0,
        firing_ttl: timedelta = timedelta(hours=12),
        clock: Clock | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        """`url` is Alertmanager's base URL (http://host:9093); `token` is sent as a bearer token."""
        self._name = name
        self._endpoint = url.rstrip("/") + "/api/v2/alerts"
        self._token = token
        self._timeout_s = timeout_s
        self._firing_ttl = firing_ttl
        self._clock: Clock = clock or SystemClock()
        self._transport = transport

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"AlertmanagerNotifier(name={self._name!r}, url={redact(self._endpoint)!r})"

    def send(self, alerts: Sequence[Alert]) -> int:
        if not alerts:
            return 0
        body = [postable(a, self._clock, self._firing_ttl) for a in alerts]
        data = json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        headers = {"Content-Type": "application/json", "User-Agent": "GPUSteward"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        with httpx.Client(timeout=self._timeout_s, transport=self._transport) as client:
            post(client, self._endpoint, data, headers, who=f"alertmanager {self._name!r}", timeout_s=self._timeout_s)
        return len(alerts)
