"""Chat notifiers: Slack, Feishu/Lark, DingTalk and WeCom incoming-webhook bots, in their own formats.

One message per `send`, listing the alerts (status, summary, evidence, fallback). The bot URLs carry
their tokens, so they never appear in errors or `repr`.

- Slack: `{"text", "blocks"}`; answers 200 "ok".
- Feishu/Lark: `{"msg_type": "post", "content": {"post": {"en_us": {title, content}}}}`; with a
  secret, `timestamp` (seconds) and `sign` = base64(HMAC-SHA256(key="<timestamp>\\n<secret>", b"")).
  Answers 200 with `{"code": 0}`; another code is an error (11232: rate limited, retried).
- DingTalk: `{"msgtype": "markdown", "markdown": {title, text}}`; with a secret the URL gets
  `timestamp` (ms) and `sign` = urlencode(base64(HMAC-SHA256(secret, "<timestamp>\\n<secret>"))).
  Answers `{"errcode": 0}` (130101: too fast, retried).
- WeCom: `{"msgtype": "markdown", "markdown": {content}}`; answers `{"errcode": 0}` (45009 and -1 retried).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote_plus

import httpx

from alerts.http import post, redact
from alerts.model import Alert
from gpusteward.clock import Clock, SystemClock
from gpusteward.errors import PermanentError, TransientError
from reports.locale import Formatter, Lang

MAX_ALERTS = 20  # per message; the rest is counted, so a long list never breaks a bot's size limit


def title(alerts: Sequence[Alert]) -> str:
    firing = sum(a.status == "firing" for a in alerts)
    names = sorted({a.labels.get("alertname", "alert") for a in alerts})
    state = f"FIRING:{firing}" if firing else "RESOLVED"
    return f"[{state}] {', '.join(names)}"


def _annotation(alert: Alert, key: str, lang: Lang) -> str:
    """An annotation in `lang` (`summary_zh`, ...), else its default text."""
    return alert.annotations.get(f"{key}_{lang}") or alert.annotations.get(key, "")


def _lines(alert: Alert, fmt: Formatter) -> list[tuple[str, str]]:
    """(label, text) pairs describing one alert in the formatter's language; empty texts are left out."""
    if alert.ends_at is None:
        when = fmt.t("chat.window.open", start=fmt.moment(alert.starts_at), zone=fmt.zone)
    else:
        when = fmt.t("chat.window.closed", start=fmt.moment(alert.starts_at), end=fmt.moment(alert.ends_at),
                     zone=fmt.zone)
    severity = alert.labels.get("severity", "")
    status = fmt.term("chat.state", alert.status) + (f" {fmt.term('chat.severity', severity)}" if severity else "")
    pairs = [
        (fmt.t("chat.label.status"), status),
        (fmt.t("chat.label.summary"), _annotation(alert, "summary", fmt.lang)),
        (fmt.t("chat.label.when"), when),
        (fmt.t("chat.label.evidence"), _annotation(alert, "evidence", fmt.lang)),
        (fmt.t("chat.label.fallback"), _annotation(alert, "fallback", fmt.lang)),
        (fmt.t("chat.label.dashboard"), alert.annotations.get("dashboard_url", "")),  # with `[dashboard] url`
    ]
    return [(k, v) for k, v in pairs if v]


def _shown(alerts: Sequence[Alert], fmt: Formatter) -> tuple[Sequence[Alert], str]:
    extra = len(alerts) - MAX_ALERTS
    return alerts[:MAX_ALERTS], (fmt.t("chat.more", count=extra) if extra > 0 else "")


def markdown(alerts: Sequence[Alert], fmt: Formatter, *, heading: str = "### ") -> str:
    shown, more = _shown(alerts, fmt)
    parts = [f"{heading}{title(alerts)}"]
    for alert in shown:
        parts.append("\n".join(f"**{k}**: {v}" for k, v in _lines(alert, fmt)))
    if more:
        parts.append(more)
    return "\n\n".join(parts)


def slack_body(alerts: Sequence[Alert], fmt: Formatter) -> dict[str, Any]:
    shown, more = _shown(alerts, fmt)
    blocks: list[dict[str, Any]] = [{"type": "header", "text": {"type": "plain_text", "text": title(alerts)[:150]}}]
    for alert in shown:
        text = "\n".join(f"*{k}*: {v}" for k, v in _lines(alert, fmt))
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": text[:3000]}})
    if more:
        blocks.append({"type": "context", "elements": [{"type": "mrkdwn", "text": more}]})
    return {"text": title(alerts), "blocks": blocks}


def feishu_body(alerts: Sequence[Alert], fmt: Formatter) -> dict[str, Any]:
    shown, more = _shown(alerts, fmt)
    content: list[list[dict[str, str]]] = []
    for alert in shown:
        content.extend([[{"tag": "text", "text": f"{k}: {v}"}] for k, v in _lines(alert, fmt)])
        content.append([{"tag": "text", "text": ""}])
    if more:
        content.append([{"tag": "text", "text": more}])
    # Feishu's post content is keyed by locale: zh_cn shows to Chinese clients, en_us to the rest.
    locale = "zh_cn" if fmt.lang == "zh" else "en_us"
    return {"msg_type": "post", "content": {"post": {locale: {"title": title(alerts), "content": content}}}}


def dingtalk_body(alerts: Sequence[Alert], fmt: Formatter) -> dict[str, Any]:
    return {"msgtype": "markdown", "markdown": {"title": title(alerts), "text": markdown(alerts, fmt)}}


def wecom_body(alerts: Sequence[Alert], fmt: Formatter) -> dict[str, Any]:
    return {"msgtype": "markdown", "markdown": {"content": markdown(alerts, fmt)[:4000]}}


def feishu_sign(secret: str, timestamp_s: int) -> str:
    key = f"{timestamp_s}\n{secret}".encode()
    return base64.b64encode(hmac.new(key, b"", hashlib.sha256).digest()).decode("ascii")


def dingtalk_sign(secret: str, timestamp_ms: int) -> str:
    """The `sign` query value, already URL-encoded."""
    digest = hmac.new(secret.encode("utf-8"), f"{timestamp_ms}\n{secret}".encode(), hashlib.sha256).digest()
    return quote_plus(base64.b64encode(digest))


@dataclass(frozen=True)
class Flavour:
    """What differs between chat bots: the body, how a secret signs it, and how they answer."""

    kind: str
    body: Callable[[Sequence[Alert], Formatter], dict[str, Any]]
    code_field: str | None  # JSON field of the answer holding the error code (0: ok)
    retry_codes: frozenset[int] = frozenset()


SLACK = Flavour("slack", slack_body, None)
FEISHU = Flavour("feishu", feishu_body, "code", frozenset({11232}))
DINGTALK = Flavour("dingtalk", dingtalk_body, "errcode", frozenset({130101, -1}))
WECOM = Flavour("wecom", wecom_body, "errcode", frozenset({45009, -1}))
FLAVOURS = {f.kind: f for f in (SLACK, FEISHU, DINGTALK, WECOM)}


class ChatNotifier:
    def __init__(
        self,
        name: str,
        url: str,
        flavour: Flavour,
        *,
        secret: str | None = None,
        lang: Lang = "en",
        zone: str = "UTC",
        timeout_s: float = 10.0,
        clock: Clock | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        if secret is not None and flavour.kind not in ("feishu", "dingtalk"):
            raise PermanentError(f"{flavour.kind} receiver {name!r}: this bot kind has no signing secret")
        self._name = name
        self._url = url
        self._flavour = flavour
        self._secret = secret
        self._fmt = Formatter(lang, zone=zone)
        self._timeout_s = timeout_s
        self._clock: Clock = clock or SystemClock()
        self._transport = transport

    @property
    def name(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"ChatNotifier(name={self._name!r}, kind={self._flavour.kind!r}, url={redact(self._url)!r})"

    def request(self, alerts: Sequence[Alert]) -> tuple[str, bytes]:
        """The URL and the exact body bytes one message is sent as (signed when there is a secret)."""
        body = self._flavour.body(alerts, self._fmt)
        url = self._url
        if self._secret is not None:
            now = self._clock.now()
            if self._flavour.kind == "feishu":
                stamp = int(now.timestamp())
                body = {"timestamp": str(stamp), "sign": feishu_sign(self._secret, stamp), **body}
            else:
                stamp_ms = int(now.timestamp() * 1000)
                sep = "&" if "?" in url else "?"
                url = f"{url}{sep}timestamp={stamp_ms}&sign={dingtalk_sign(self._secret, stamp_ms)}"
        return url, json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def send(self, alerts: Sequence[Alert]) -> int:
        if not alerts:
            return 0
        who = f"{self._flavour.kind} {self._name!r}"
        url, data = self.request(alerts)
        headers = {"Content-Type": "application/json; charset=utf-8", "User-Agent": "GPUSteward"}
        with httpx.Client(timeout=self._timeout_s, transport=self._transport) as client:
            response = post(client, url, data, headers, who=who, timeout_s=self._timeout_s)
        self._check(response, who)
        return len(alerts)

    def _check(self, response: httpx.Response, who: str) -> None:
        field = self._flavour.code_field
        if field is None:
            return
        try:
            answer = response.json()
        except ValueError:
            raise PermanentError(f"{who}: the bot did not answer JSON") from None
        code = answer.get(field, answer.get("StatusCode", 0)) if isinstance(answer, dict) else 0
        if code in (0, None):
            return
        message = str(answer.get("msg") or answer.get("errmsg") or "")[:200]
        error = TransientError if code in self._flavour.retry_codes else PermanentError
        raise error(f"{who}: the bot answered {field} {code}: {message}")
