"""The control API served on a free loopback port in front of a controller that only records.

Shared by the hostile-request tests (tests/service/test_api_hostile.py, test_api_limits.py), the token tests
(tests/security/test_api_tokens.py) and the fuzzer's control-API target
(tests/badinput/service_targets.py): each checks what the API answers and what it was asked to do,
never what a real controller would do with it.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from prometheus_client import CollectorRegistry

from service.api import ApiContext, Request
from service.api_app import MAX_IN_FLIGHT
from service.api_identity import ProxyIdentity
from service.api_server import ApiServer
from service.api_tokens import Tokens

NOW = datetime(2026, 11, 2, tzinfo=UTC)


@dataclass
class RecordingController:
    """Records (audits) every request it is asked to act on, and acts on none."""

    at: datetime = NOW
    acted: list[Request] = field(default_factory=list)

    def now(self) -> datetime:
        return self.at

    def act(self, request: Request) -> dict[str, Any]:
        self.acted.append(request)
        return {"action_id": len(self.acted), "action": request.action, "target": request.target}


@dataclass
class ServedApi:
    host: str
    port: int
    controller: RecordingController
    thread: threading.Thread  # serving; a finding when it dies

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"


@contextmanager
def served_api(
    tokens: Mapping[str, str] | Tokens,
    *,
    read_timeout_s: float | None = None,
    ready: bool = False,
    controller: RecordingController | None = None,
    max_in_flight: int = MAX_IN_FLIGHT,
    proxy: ProxyIdentity | None = None,
) -> Iterator[ServedApi]:
    """The API with `tokens` (identity -> token, admins; or a Tokens) on 127.0.0.1, stopped on exit;
    `proxy`: identity from a trusted proxy's header too.

    `read_timeout_s`: None keeps the API's own default, so a regression test of that default
    (and of the code before it had one) sets nothing the older code does not take."""
    controller = controller or RecordingController()
    ready_event = threading.Event()
    if ready:
        ready_event.set()
    known = tokens if isinstance(tokens, Tokens) else Tokens(tokens)
    parts = (CollectorRegistry(), known, controller, ready_event, lambda: True)
    ctx = ApiContext(*parts, proxy=proxy) if read_timeout_s is None else ApiContext(
        *parts, read_timeout_s=read_timeout_s, proxy=proxy)
    with ApiServer(ctx, max_in_flight=max_in_flight) as server:
        yield ServedApi("127.0.0.1", server.port, controller, server.thread)
