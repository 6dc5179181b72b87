"""Webhook notifier: POSTs an Alertmanager-webhook-compatible body (version 4), optionally signed.

Signature: header `X-GPUSteward-Signature: sha256=<hex HMAC-SHA256(secret, body bytes)>`, over the
exact bytes sent. The secret and the URL's credentials or query never appear in errors.
One POST per alert name, as an Alertmanager route grouped by alertname would send them.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Sequence
from typing import Any

import httpx

from alerts.http import post, redact
from alerts.model import Alert

__all__ = ["SIGNATURE_HEADER", "USER_AGENT", "WebhookNotifier", "redact", "sign", "webhook_body"]

SIGNATURE_HEADER = "X-GPUSteward-Signature"
USER_AGENT = "GPUSteward"


def sign(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode("utf-8"), body, hashlib.sha256).hexdigest()


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
        timeout_s: float = 10.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._name = name
        self._url = url
        self._secret = secret
        self._timeout_s = timeout_s
        self._transport = transport

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:  # never show the secret
        return f"WebhookNotifier(name={self._name!r}, url={redact(self._url)!r}, signed={self._secret is not None})"

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
                if self._secret is not None:
                    headers[SIGNATURE_HEADER] = sign(self._secret, data)
                post(client, self._url, data, headers, who=f"webhook {self._name!r}", timeout_s=self._timeout_s)
        return len(alerts)
