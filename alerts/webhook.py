"""Webhook notifier: POSTs an Alertmanager-webhook-compatible body (version 4), optionally signed.

Signature: header `X-GPUSteward-Signature: t=<unix seconds>,v1=<hex HMAC-SHA256(secret, "t." + body)>`,
over the sending time and the exact bytes sent, with one more `v1` for the previous secret while it
is rotated (alerts/webhook_signature.py, which receivers can copy, verifies it and refuses stale
or replayed deliveries). The secrets and the URL's credentials or query never appear in errors.
One POST per alert name, as an Alertmanager route grouped by alertname would send them.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import httpx

from alerts.http import post, redact
from alerts.model import Alert
from alerts.webhook_signature import SIGNATURE_HEADER, SignatureError, sign, verify
from gpusteward.clock import Clock, SystemClock

__all__ = [
    "SIGNATURE_HEADER", "USER_AGENT", "SignatureError", "WebhookNotifier", "redact", "sign", "verify", "webhook_body",
]

USER_AGENT = "GPUSteward"


def _common(dicts: list[dict[str, str]]) -> dict[str, str]:
    if not dicts:
        return {}
    first = dicts[0]
    return {k: v for k, v in sorted(first.items()) if all(d.get(k) == v for d in dicts[1:])}


def webhook_body(receiver: str, alerts: Sequence[Alert]) -> dict[str, Any]:
    """The body Alertmanager would post for one group of alerts (grouped by alertname)."""
    group = {"alertname": alerts[0].labels.get("alertname", "")} if alerts else {}
    inner = ", ".join(f'{k}="{v}"' for k, v in group.items())
    return {
        "receiver": receiver,
        "status": "firing" if any(a.status == "firing" for a in alerts) else "resolved",
        "alerts": [a.to_dict() for a in alerts],
        "groupLabels": group,
        "commonLabels": _common([a.labels for a in alerts]),
        "commonAnnotations": _common([a.annotations for a in alerts]),
        "externalURL": "",
        "version": "4",
        "groupKey": "{}:{" + inner + "}",
        "truncatedAlerts": 0,
    }


class WebhookNotifier:
    def __init__(
        self,
        name: str,
        url: str,
        *,
        secret: str | None = None,
        previous_secret: str | None = None,
        timeout_s: float = 10.0,
        transport: httpx.BaseTransport | None = None,
        clock: Clock | None = None,
    ) -> None:
        self._name = name
        self._url = url
        # The previous secret signs too only beside a current one: it is there for rotation, not alone.
        self._secrets = tuple(s for s in (secret, previous_secret if secret else None) if s)
        self._timeout_s = timeout_s
        self._transport = transport
        self._clock = clock or SystemClock()

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:  # never show the secret
        return f"WebhookNotifier(name={self._name!r}, url={redact(self._url)!r}, signed={bool(self._secrets)})"

    def _groups(self, alerts: Sequence[Alert]) -> list[list[Alert]]:
        groups: dict[str, list[Alert]] = {}
        for alert in alerts:
            groups.setdefault(alert.labels.get("alertname", ""), []).append(alert)
        return [groups[k] for k in sorted(groups)]

    def send(self, alerts: Sequence[Alert]) -> int:
        if not alerts:
            return 0
        with httpx.Client(timeout=self._timeout_s, transport=self._transport) as client:
            for group in self._groups(alerts):
                body = json.dumps(webhook_body(self._name, group), separators=(",", ":"), ensure_ascii=False)
                data = body.encode("utf-8")
                headers = {"Content-Type": "application/json", "User-Agent": USER_AGENT}
                if self._secrets:  # signed per POST, so a retry carries its own time
                    headers[SIGNATURE_HEADER] = sign(self._secrets, data, int(self._clock.now().timestamp()))
                post(client, self._url, data, headers, who=f"webhook {self._name!r}", timeout_s=self._timeout_s)
        return len(alerts)
