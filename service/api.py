"""The service's HTTP endpoints on loopback: /metrics, /healthz, /readyz and the token-authenticated control API.

    POST /api/v1/plans/{plan_id}/approve        {"reason": "...", "override": "..."} -> 200 {"action_id": ...}
    POST /api/v1/plans/{plan_id}/reject         {"reason": "..."}
    POST /api/v1/alerts/{fingerprint}/silence   {"minutes": 120, "reason": "..."}
    POST /api/v1/alerts/{fingerprint}/acknowledge
    POST /api/v1/reviews                        {"month": "YYYY-MM"}         -> 202
    POST /api/v1/quarantine/retry               {"path": "...", "reason": "..."} -> 202

Callers send `Authorization: Bearer <token>`; the token's identity is who the audit trail names.
A plan whose replay makes a protected objective worse is refused (409) unless the approval carries an
`override` reason, stored with the approval (docs/quota.md).
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
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Protocol

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest

from gpusteward.domain import Month
from warehouse.control import Action, ControlError

log = logging.getLogger("gpusteward.service.api")

TOKENS_ENV = "GPUSTEWARD_API_TOKENS"
MAX_BODY = 64 * 1024  # bytes; a larger Content-Length is refused with 413 before anything is read
MAX_DEPTH = 16  # nesting of arrays and objects in a body; the API's own bodies are flat objects
READ_TIMEOUT_S = 10.0  # a connection silent this long mid-request is answered 408 (or closed when idle)
MAX_SILENCE = timedelta(days=31)
_ROUTES: tuple[tuple[re.Pattern[str], Action], ...] = (
    (re.compile(r"^/api/v1/plans/([A-Za-z0-9._-]+)/approve$"), "plan.approve"),
    (re.compile(r"^/api/v1/plans/([A-Za-z0-9._-]+)/reject$"), "plan.reject"),
    (re.compile(r"^/api/v1/alerts/([0-9a-f]{8,64})/silence$"), "alert.silence"),
    (re.compile(r"^/api/v1/alerts/([0-9a-f]{8,64})/acknowledge$"), "alert.acknowledge"),
    (re.compile(r"^/api/v1/reviews$"), "review.trigger"),
    (re.compile(r"^/api/v1/quarantine/retry$"), "import.retry"),
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
    override: str | None = None


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
    read_timeout_s: float = READ_TIMEOUT_S


def _request(actor: str, action: Action, target: str, body: Mapping[str, Any], now: datetime) -> Request:
    reason = body.get("reason")
    if reason is not None and not isinstance(reason, str):
        raise ControlError("reason must be a string", status=400)
    override = body.get("override")
    if override is not None and not isinstance(override, str):
        raise ControlError("override must be a string: why the plan is approved despite its replay", status=400)
    until = None
    if action == "alert.silence":
        minutes = body.get("minutes")
        if not isinstance(minutes, int) or isinstance(minutes, bool) or minutes <= 0:
            raise ControlError("a silence needs a positive whole number of minutes", status=400)
        if minutes > MAX_SILENCE // timedelta(minutes=1):  # compared as numbers: 10**26 minutes is no timedelta
            raise ControlError(f"a silence lasts at most {MAX_SILENCE.days} days", status=400)
        until = now + timedelta(minutes=minutes)
    month = None
    if action == "review.trigger":
        month = body.get("month")
        if month is not None and not _is_month(month):
            raise ControlError("month must be a month that exists, as YYYY-MM (e.g. 2026-10)", status=400)
        target = month or "latest"
    if action == "import.retry":
        path = body.get("path")
        if not isinstance(path, str) or not path or len(path) > 4096 or "\x00" in path:
            raise ControlError("path must be the quarantined file's path, as `gpusteward status` shows it", status=400)
        target = path
    return Request(actor, action, target, until, reason, month, override)


def _is_month(value: object) -> bool:
    if not isinstance(value, str) or not re.fullmatch(r"\d{4}-\d{2}", value):
        return False
    try:
        Month.parse(value)
    except ValueError:
        return False
    return True


def _nesting(raw: bytes) -> int:
    """The deepest nesting of arrays and objects in a JSON text (brackets inside strings not counted)."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            if escaped:
                escaped = False
            elif byte == 0x5C:  # backslash
                escaped = True
            elif byte == 0x22:  # quote
                in_string = False
        elif byte == 0x22:
            in_string = True
        elif byte in {0x5B, 0x7B}:  # [ {
            depth += 1
            deepest = max(deepest, depth)
        elif byte in {0x5D, 0x7D}:
            depth -= 1
    return deepest


def _no_constants(name: str) -> None:
    raise ValueError(f"{name} is not a JSON number")


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
        if self.close_connection:
            self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(body)

    def parse_request(self) -> bool:
        """http.server's parsing, less HTTP/0.9 (`GET /path` alone), which has no status line or headers."""
        if not super().parse_request():
            return False
        if self.request_version == "HTTP/0.9":
            self.send_error(400, "HTTP/0.9 is not spoken here: send HTTP/1.0 or HTTP/1.1 requests")
            return False
        return True

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a malformed request line, headers too long, an unknown method)
        as a JSON answer with a status line, like every other error of this API."""
        del explain
        if self.request_version == "HTTP/0.9":  # not spoken here: answer with a status line anyway
            self.request_version = "HTTP/1.1"
        self.close_connection = True
        text = message or HTTPStatus(code).phrase
        self._send(code, json.dumps({"error": text}).encode())

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
        try:
            self._post()
        except Exception:  # never a dropped connection: the caller hears that it failed
            log.exception("control API: %s failed", self.path.split("?", 1)[0])
            self.close_connection = True
            self._json(500, {"error": "internal error; the service log has the details"})

    def _post(self) -> None:
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
        self._finish(action, 202 if action in ("review.trigger", "import.retry") else 200, result)

    def _finish(self, action: str, status: int, data: Mapping[str, Any]) -> None:
        if status >= 400:  # a body may be left unread: never parse it as the next request
            self.close_connection = True
        if self.ctx.on_action is not None:
            self.ctx.on_action(action, status)
        self._json(status, data)

    def _body(self) -> dict[str, Any]:
        """The request's JSON object: its size, arrival time and nesting bounded, each refusal a 4xx."""
        if self.headers.get("Transfer-Encoding"):
            raise ControlError("send the body with a Content-Length, not a Transfer-Encoding", status=411)
        declared = (self.headers.get("Content-Length") or "0").strip()
        if not (declared.isascii() and declared.isdigit()):
            raise ControlError(f"Content-Length must be a whole number of bytes, not {declared[:40]!r}", status=400)
        length = int(declared) if len(declared) <= len(str(MAX_BODY)) else MAX_BODY + 1
        if length > MAX_BODY:
            raise ControlError(f"request body too large: at most {MAX_BODY} bytes", status=413)
        if length == 0:
            return {}
        try:
            raw = self.rfile.read(length)
        except TimeoutError as exc:
            raise ControlError(
                f"timed out: the body of {length} bytes (its Content-Length) did not arrive within "
                f"{self.ctx.read_timeout_s:g} s",
                status=408,
            ) from exc
        if len(raw) < length:
            raise ControlError(f"the body ended after {len(raw)} of its Content-Length {length} bytes", status=400)
        if _nesting(raw) > MAX_DEPTH:
            raise ControlError(f"the body nests arrays or objects deeper than {MAX_DEPTH} levels", status=400)
        try:
            data = json.loads(raw, parse_constant=_no_constants)
        except (ValueError, RecursionError) as exc:
            raise ControlError(f"the body is not JSON: {str(exc)[:200]}", status=400) from exc
        if not isinstance(data, dict):
            raise ControlError("the body must be a JSON object", status=400)
        return data


def make_server(ctx: ApiContext, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A server bound to host:port (0: any free port); call serve_forever() in a thread."""
    # `timeout`: socketserver sets it on each connection, so no read waits longer (slow or short bodies).
    handler = type("BoundHandler", (Handler,), {"ctx": ctx, "timeout": ctx.read_timeout_s})
    server = ThreadingHTTPServer((host, port), handler)
    server.daemon_threads = True
    return server
