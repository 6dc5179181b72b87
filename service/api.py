"""The service's HTTP endpoints on loopback: /metrics, /healthz, /readyz and the token-authenticated control API.

    POST /api/v1/plans/{plan_id}/approve        {"reason": "..."}            -> 200 {"action_id": ...}
    POST /api/v1/plans/{plan_id}/reject         {"reason": "..."}
    POST /api/v1/alerts/{fingerprint}/silence   {"minutes": 120, "reason": "..."}
    POST /api/v1/alerts/{fingerprint}/acknowledge
    POST /api/v1/reviews                        {"month": "YYYY-MM"}         -> 202

Callers send `Authorization: Bearer <token>`; the token's identity is who the audit trail names.
Tokens come from $GPUSTEWARD_API_TOKENS or a file (`identity:token` per line) and are never logged.
"""

from __future__ import annotations

import hmac
import json
import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from warehouse.control import Action, ControlError

log = logging.getLogger("gpusteward.service.api")

TOKENS_ENV = "GPUSTEWARD_API_TOKENS"
MAX_BODY = 64 * 1024
MAX_SILENCE = timedelta(days=31)
_ROUTES: tuple[tuple[re.Pattern[str], Action], ...] = (
    (re.compile(r"^/api/v1/plans/([A-Za-z0-9._-]+)/approve$"), "plan.approve"),
    (re.compile(r"^/api/v1/plans/([A-Za-z0-9._-]+)/reject$"), "plan.reject"),
    (re.compile(r"^/api/v1/alerts/([0-9a-f]{8,64})/silence$"), "alert.silence"),
    (re.compile(r"^/api/v1/alerts/([0-9a-f]{8,64})/acknowledge$"), "alert.acknowledge"),
    (re.compile(r"^/api/v1/reviews$"), "review.trigger"),
)


class Tokens:
    """Bearer tokens -> caller identity. Its repr never shows a token."""

    def __init__(self, pairs: Mapping[str, str]) -> None:
        self._by_token = {token: identity for identity, token in pairs.items() if token}

    def __repr__(self) -> str:
        return f"Tokens({len(self._by_token)} configured)"

    def __len__(self) -> int:
        return len(self._by_token)

    def identify(self, header: str | None) -> str | None:
        if not header or not header.startswith("Bearer "):
            return None
        offered = header.removeprefix("Bearer ").strip()
        found = None
        for token, identity in self._by_token.items():  # compare every one: no timing hint of a prefix
            if hmac.compare_digest(token.encode(), offered.encode()):
                found = identity
        return found


def parse_tokens(text: str) -> dict[str, str]:
    """`identity:token` pairs separated by newlines or commas; blank lines and # comments skipped."""
    pairs: dict[str, str] = {}
    for raw in re.split(r"[\n,]", text):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        identity, sep, token = line.partition(":")
        if not sep or not identity.strip() or not token.strip():
            raise ValueError("a token entry must look like identity:token (the entry is not shown)")
        pairs[identity.strip()] = token.strip()
    return pairs


def load_tokens(files: list[Path], env: Mapping[str, str] | None = None) -> Tokens:
    environ = os.environ if env is None else env
    pairs = parse_tokens(environ.get(TOKENS_ENV, ""))
    for path in files:
        pairs |= parse_tokens(path.read_text(encoding="utf-8"))
    return Tokens(pairs)


@dataclass(frozen=True)
class Request:
    actor: str
    action: Action
    target: str
    until: datetime | None
    reason: str | None
    month: str | None = None


class Controller(Protocol):
    """What the API asks of the service; raises ControlError for a request that cannot be done."""

    def now(self) -> datetime: ...
    def act(self, request: Request) -> dict[str, Any]: ...


@dataclass(frozen=True)
class ApiContext:
    registry: CollectorRegistry
    tokens: Tokens
    controller: Controller
    ready: threading.Event
    healthy: Callable[[], bool]
    on_action: Callable[[str, int], None] | None = None


def _request(actor: str, action: Action, target: str, body: Mapping[str, Any], now: datetime) -> Request:
    reason = body.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ControlError("reason must be a string", status=400)
    until = None
    if action == "alert.silence":
        minutes = body.get("minutes")
        if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes <= 0:
            raise ControlError("a silence needs a positive whole number of minutes", status=400)
        if timedelta(minutes=minutes) > MAX_SILENCE:
            raise ControlError(f"a silence lasts at most {MAX_SILENCE.days} days", status=400)
        until = now + timedelta(minutes=minutes)
    month = None
    if action == "review.trigger":
        month = body.get("month")
        if month is not None and (not isinstance(month, str) or not re.fullmatch(r"\d{4}-\d{2}", month)):
            raise ControlError("month must look like YYYY-MM", status=400)
        target = month or "latest"
    return Request(actor, action, target, until, reason, month)


class Handler(BaseHTTPRequestHandler):
    server_version = "gpusteward"
    ctx: ApiContext  # set on the subclass made by `make_server`

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s %s", self.address_string(), format % args)  # the request line only; never headers

    def _send(self, status: int, body: bytes, content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data: Mapping[str, Any]) -> None:
        self._send(status, json.dumps(data, default=str).encode())

    def do_GET(self) -> None:
        path = self.path.split("?", 1)[0]
        if path == "/metrics":
            self._send(200, generate_latest(self.ctx.registry), CONTENT_TYPE_LATEST)
        elif path == "/healthz":
            ok = self.ctx.healthy()
            self._send(200 if ok else 503, b"ok\n" if ok else b"the job loop has stopped\n", "text/plain")
        elif path == "/readyz":
            ready = self.ctx.ready.is_set()
            self._send(200 if ready else 503, b"ready\n" if ready else b"starting\n", "text/plain")
        else:
            self._json(404, {"error": "not found"})

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        match = next(((m, a) for pattern, a in _ROUTES if (m := pattern.match(path))), None)
        if match is None:
            self._json(404, {"error": "not found"})
            return
        found, action = match
        actor = self.ctx.tokens.identify(self.headers.get("Authorization"))
        if actor is None:
            self._finish(action, 401, {"error": "a valid bearer token is required"})
            return
        try:
            body = self._body()
            request = _request(actor, action, found.group(1) if found.groups() else "", body, self.ctx.controller.now())
            result = self.ctx.controller.act(request)
        except ControlError as exc:
            self._finish(action, exc.status, {"error": str(exc)})
            return
        log.info("control: %s %s %s by %s", action, request.target, "accepted", actor)
        self._finish(action, 202 if action == "review.trigger" else 200, result)

    def _finish(self, action: str, status: int, data: Mapping[str, Any]) -> None:
        if self.ctx.on_action is not None:
            self.ctx.on_action(action, status)
        self._json(status, data)

    def _body(self) -> dict[str, Any]:
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            raise ControlError("request body too large", status=413)
        if length == 0:
            return {}
        try:
            data = json.loads(self.rfile.read(length))
        except ValueError as exc:
            raise ControlError(f"the body is not JSON: {exc}", status=400) from exc
        if not isinstance(data, dict):
            raise ControlError("the body must be a JSON object", status=400)
        return data


def make_server(ctx: ApiContext, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A server bound to host:port (0: any free port); call serve_forever() in a thread."""
    handler = type("BoundHandler", (Handler,), {"ctx": ctx})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
