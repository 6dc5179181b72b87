"""The control API as a Starlette app: /metrics, /healthz, /readyz, the OpenAPI document and the
token-authenticated POST endpoints of `service/api.py`.

Every refusal is a JSON object `{"error": what is wrong, "where": the part at fault}` with a 4xx
status, and the connection is closed after it (a body may be left unread). A POST is answered in
this order: route (404/405), token or a trusted proxy's user (401; 403 for an untrusted peer), role
(403), body read within the time and size limits (408/413),
body checked field by field (400), then the controller acts (and only then is it audited).
GETs are served on the event loop and never wait for the write lock; the controller's actions run
on a small pool of threads, so a job holding the lock cannot starve /metrics or /healthz.
"""

from __future__ import annotations

import asyncio
import functools
import json
import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
import anyio.to_thread
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import ClientDisconnect
from starlette.requests import Request as HttpRequest
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from service.api import MAX_BODY, ApiContext, BadRequestError, build_request, parse_body
from service.api_identity import identify
from service.api_openapi import ENDPOINTS, Endpoint, openapi_document
from service.api_tokens import least_role
from warehouse.control import Action, ControlError

log = logging.getLogger("gpusteward.service.api")

MAX_HEADER_BYTES = 16 * 1024  # request line and headers; more is answered 431
MAX_IN_FLIGHT = 64  # requests being answered at once; more are refused with 503 and Retry-After
ACTION_THREADS = 4  # controller actions run at once (they queue on the one write lock anyway)


def error(status: int, message: str, where: str, headers: Mapping[str, str] | None = None) -> JSONResponse:
    """A refusal: JSON naming what and where; the connection closes after it."""
    return JSONResponse(
        {"error": message, "where": where},
        status_code=status,
        headers={"Cache-Control": "no-store", "Connection": "close", **(headers or {})},
    )


def _json(status: int, data: Mapping[str, Any]) -> Response:
    if status >= 400:
        return error(status, str(data.get("error", "")), str(data.get("where", "request")))
    body = json.dumps(data, default=str).encode()
    return Response(body, status_code=status, media_type="application/json", headers={"Cache-Control": "no-store"})


@dataclass
class _Handlers:
    ctx: ApiContext
    limiter: anyio.CapacityLimiter

    async def metrics(self, _request: HttpRequest) -> Response:
        return Response(generate_latest(self.ctx.registry), media_type=CONTENT_TYPE_LATEST,
                        headers={"Cache-Control": "no-store"})

    async def healthz(self, _request: HttpRequest) -> Response:
        ok = self.ctx.healthy()
        return PlainTextResponse("ok\n" if ok else "the job loop has stopped\n", status_code=200 if ok else 503)

    async def readyz(self, _request: HttpRequest) -> Response:
        ready = self.ctx.ready.is_set()
        return PlainTextResponse("ready\n" if ready else "starting\n", status_code=200 if ready else 503)

    async def openapi(self, _request: HttpRequest) -> Response:
        return JSONResponse(openapi_document())

    def control(self, endpoint: Endpoint) -> Callable[[HttpRequest], Awaitable[Response]]:
        assert endpoint.action is not None
        action: Action = endpoint.action

        async def handle(request: HttpRequest) -> Response:
            try:
                return await self._act(request, action, endpoint)
            except ControlError as exc:
                return self._finish(action, exc.status, {"error": str(exc), "where": getattr(exc, "where", "request")})
            except ClientDisconnect:
                return self._finish(action, 400, {"error": "the client closed the connection mid-request",
                                                  "where": "body"})
            except Exception:  # never a dropped connection: the caller hears that it failed
                log.exception("control API: %s failed", request.url.path)
                return self._finish(action, 500, {"error": "internal error; the service log has the details",
                                                  "where": "service"})

        return handle

    async def _act(self, request: HttpRequest, action: Action, endpoint: Endpoint) -> Response:
        peer = request.client.host if request.client else None
        caller = identify(self.ctx.tokens, self.ctx.proxy, request.headers, peer)
        if not caller.may(action):  # refused before the body is read, so nothing of it is recorded
            via = f" (through {caller.via}'s token)" if caller.via else ""
            return self._finish(action, 403, {
                "error": f"{caller.identity} has the {caller.role} role{via}; {action} needs {least_role(action)} "
                         "or above",
                "where": "header Authorization"})
        actor = caller.identity
        body = parse_body(await self._read_body(request))
        # In the path's order: cluster/job_id, or cluster/namespace/name for a Kueue Workload.
        target = "/".join(str(v) for v in request.path_params.values())
        checked = build_request(actor, action, target, body, self.ctx.controller.now(), via=caller.via,
                                role=caller.role)
        result = await anyio.to_thread.run_sync(
            functools.partial(self.ctx.controller.act, checked), limiter=self.limiter
        )
        log.info("control: %s %s accepted by %s%s", action, checked.target, actor,
                 f" via {caller.via}" if caller.via else "")
        return self._finish(action, endpoint.status, result)

    async def _read_body(self, request: HttpRequest) -> bytes:
        """The body, at most MAX_BODY bytes, all of it within the read timeout (Content-Length or chunked)."""
        declared = request.headers.get("content-length")
        if declared is not None:
            text = declared.strip()
            if not (text.isascii() and text.isdigit()):
                raise BadRequestError(f"Content-Length must be a whole number of bytes, not {text[:40]!r}",
                                      where="header Content-Length")
            if len(text) > len(str(MAX_BODY)) or int(text) > MAX_BODY:
                raise BadRequestError(f"request body too large: at most {MAX_BODY} bytes",
                                      where="header Content-Length", status=413)
        raw = bytearray()
        limit = self.ctx.read_timeout_s
        try:
            async with asyncio.timeout(limit):
                async for chunk in request.stream():
                    raw += chunk
                    if len(raw) > MAX_BODY:
                        raise BadRequestError(f"request body too large: at most {MAX_BODY} bytes", where="body",
                                         status=413)
        except TimeoutError as exc:
            of = f" of {declared} bytes (its Content-Length)" if declared else ""
            raise BadRequestError(f"timed out: the body{of} did not arrive within {limit:g} s", where="body",
                             status=408) from exc
        return bytes(raw)

    def _finish(self, action: str, status: int, data: Mapping[str, Any]) -> Response:
        if self.ctx.on_action is not None:
            self.ctx.on_action(action, status)
        return _json(status, data)


class InFlightLimit:
    """Refuse headers over MAX_HEADER_BYTES (431), and control requests beyond `limit` being
    answered at once (503, Retry-After).

    h11 bounds only headers still arriving; headers that arrive whole are measured here. GETs are
    not counted in flight: they are answered on the event loop at once, and must keep answering
    (health checks, scrapes) while actions queue for the write lock."""

    def __init__(self, app: ASGIApp, limit: int = MAX_IN_FLIGHT) -> None:
        self.app = app
        self.limit = limit
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        size = sum(len(name) + len(value) + 4 for name, value in scope["headers"])
        if size > MAX_HEADER_BYTES:
            too_large = error(431, f"request headers too large: at most {MAX_HEADER_BYTES} bytes", "headers")
            await too_large(scope, receive, send)
            return
        if scope["method"] in {"GET", "HEAD"}:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.limit:
            busy = error(503, f"busy: {self.limit} requests are being answered; retry shortly", "service",
                         {"Retry-After": "1"})
            await busy(scope, receive, send)
            return
        self.in_flight += 1
        try:
            await self.app(scope, receive, send)
        finally:
            self.in_flight -= 1


async def _http_error(_request: HttpRequest, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    message = {404: "not found", 405: "method not allowed"}.get(exc.status_code, str(exc.detail))
    return error(exc.status_code, message, "path" if exc.status_code == 404 else "method", exc.headers)


async def _internal_error(request: HttpRequest, _exc: Exception) -> Response:
    log.exception("API: %s failed", request.url.path)
    return error(500, "internal error; the service log has the details", "service")


def make_app(ctx: ApiContext, *, max_in_flight: int = MAX_IN_FLIGHT) -> ASGIApp:
    """The ASGI app of the service's HTTP endpoints, routed from ENDPOINTS (which the OpenAPI document lists)."""
    handlers = _Handlers(ctx, anyio.CapacityLimiter(ACTION_THREADS))
    gets: dict[str, Callable[[HttpRequest], Awaitable[Response]]] = {
        "/metrics": handlers.metrics,
        "/healthz": handlers.healthz,
        "/readyz": handlers.readyz,
        "/api/v1/openapi.json": handlers.openapi,
    }
    routes = [
        Route(e.path, gets[e.path] if e.action is None else handlers.control(e), methods=[e.method])
        for e in ENDPOINTS
    ]
    app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error, Exception: _internal_error})
    return InFlightLimit(app, max_in_flight)
