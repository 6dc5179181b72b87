"""The control API refuses requests without a valid bearer token, and never logs a token."""

from __future__ import annotations

import json
import logging
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from service.api import ApiContext, Request, Tokens, make_server

TOKEN = "tok-alice-8c1b2f4e9a"
OTHER = "tok-bob-77aa31c0de"


class Recording:
    def __init__(self) -> None:
        self.requests: list[Request] = []

    def now(self) -> datetime:
        return datetime(2026, 10, 5, tzinfo=UTC)

    def act(self, request: Request) -> dict[str, Any]:
        self.requests.append(request)
        return {"action_id": len(self.requests)}


@pytest.fixture
def api() -> Iterator[tuple[str, Recording]]:
    controller = Recording()
    ready = threading.Event()
    ready.set()
    ctx = ApiContext(CollectorRegistry(), Tokens({"alice": TOKEN, "bob": OTHER}), controller, ready, lambda: True)
    server = make_server(ctx)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", controller
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def _post(base: str, path: str, authorization: str | None) -> int:
    request = urllib.request.Request(base + path, data=json.dumps({"reason": "ok"}).encode(), method="POST",
                                     headers={"Content-Type": "application/json"})
    if authorization is not None:
        request.add_header("Authorization", authorization)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@pytest.mark.parametrize(
    "authorization",
    [None, "", "Bearer", "Bearer ", "Bearer wrong", f"Bearer {TOKEN}x", f"Bearer {TOKEN[:-1]}", f"Basic {TOKEN}",
     f"bearer {TOKEN}", TOKEN],
)
def test_missing_or_wrong_tokens_are_refused_and_nothing_is_done(
    api: tuple[str, Recording], authorization: str | None
) -> None:
    base, controller = api
    assert _post(base, "/api/v1/plans/p-1/approve", authorization) == 401
    assert controller.requests == []


def test_a_valid_token_acts_as_its_identity_and_is_never_logged(
    api: tuple[str, Recording], caplog: pytest.LogCaptureFixture
) -> None:
    base, controller = api
    with caplog.at_level(logging.DEBUG):
        assert _post(base, "/api/v1/plans/p-1/approve", f"Bearer {OTHER}") == 200
        assert _post(base, "/api/v1/plans/p-1/reject", f"Bearer {OTHER}-guess") == 401
    assert [r.actor for r in controller.requests] == ["bob"]
    assert OTHER not in caplog.text
    assert TOKEN not in repr(Tokens({"alice": TOKEN}))
