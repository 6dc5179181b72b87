"""Regression tests of the reviewers' findings against the hand-written control API (issue 22), now
served by uvicorn: each refusal is a JSON answer naming what and where, no request holds a
connection or a thread for long, and a refused request is never acted on (so never audited)."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from prometheus_client import CollectorRegistry

from service.api import ApiContext, Request
from service.api_app import ACTION_THREADS
from service.api_server import ApiServer
from service.api_tokens import Tokens
from tests.service.api_rig import RecordingController, ServedApi, served_api
from tests.service.test_api_hostile import exchange, raw

TOKEN = "alice-secret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def api() -> Iterator[ServedApi]:
    with served_api({"alice": TOKEN}, read_timeout_s=0.5) as served:
        yield served


def _answer(data: bytes) -> tuple[int, dict[str, Any]]:
    status_line, _, rest = data.partition(b"\r\n")
    head, _, payload = rest.partition(b"\r\n\r\n")
    assert b"application/json" in head.lower(), data[:300]
    return int(status_line.split()[1]), json.loads(payload)


@pytest.mark.parametrize("length", ["abc", "1e3", " 5x", "²"])
def test_a_non_numeric_content_length_gets_a_json_400_naming_the_header(api: ServedApi, length: str) -> None:
    """Was: int() raised ValueError outside the handler's except, and the client got no answer."""
    status, answer = raw(api, "/api/v1/reviews", b'{"month": "2026-10"}', length=length, timeout=5)
    assert status == 400, answer
    assert answer["where"] == "header Content-Length"
    assert "Content-Length" in answer["error"]
    assert api.controller.acted == []


def test_a_negative_content_length_is_answered_at_once(api: ServedApi) -> None:
    """Was: rfile.read(-1) read until the client closed; the 5 s socket timeout here fails on a wait."""
    status, answer = raw(api, "/api/v1/reviews", b'{"month": "2026-10"}', length="-1", timeout=5)
    assert status == 400
    assert answer["where"] == "header Content-Length"
    assert api.controller.acted == []


def test_headers_that_trickle_in_are_cut_off_with_408(api: ServedApi) -> None:
    """Was: no socket timeout, so a slow client held a thread for ever."""
    with socket.create_connection((api.host, api.port), timeout=5) as sock:
        sock.sendall(b"POST /api/v1/reviews HTTP/1.1\r\nHost: x\r\n")  # and never the rest
        data = b"".join(iter(lambda: sock.recv(65536), b""))
    status, answer = _answer(data)
    assert status == 408
    assert answer["where"] == "headers"
    assert "did not arrive within 0.5 s" in answer["error"]


def test_a_connection_that_sends_nothing_is_closed(api: ServedApi) -> None:
    with socket.create_connection((api.host, api.port), timeout=5) as sock:
        assert sock.recv(1) == b""  # closed by the server (a timeout here raises)


def test_a_body_that_stops_arriving_gets_408(api: ServedApi) -> None:
    status, answer = raw(api, "/api/v1/reviews", b'{"month": "2026-10"}', length="100", timeout=5)
    assert (status, answer["where"]) == (408, "body")
    assert api.controller.acted == []


def test_a_body_over_the_limit_sent_chunked_is_refused_with_413(api: ServedApi) -> None:
    def chunks() -> Iterator[bytes]:
        yield b'{"reason": "'
        for _ in range(100):
            yield b"x" * 1024
        yield b'"}'

    response = httpx.post(f"{api.url}/api/v1/reviews", content=chunks(), headers=AUTH, timeout=10)
    assert response.status_code == 413
    assert response.json()["where"] == "body"
    assert api.controller.acted == []


@pytest.mark.parametrize(
    ("path", "body", "where"),
    [
        ("/api/v1/reviews", {"month": "2026-13"}, "body.month"),
        ("/api/v1/reviews", {"month": "2026-10", "mnth": "x"}, "body.mnth"),
        ("/api/v1/plans/p-1/approve", {"reason": ["a list"]}, "body.reason"),
        ("/api/v1/plans/p-1/approve", {"override": "x" * 5000}, "body.override"),
        ("/api/v1/plans/p-1/reject", {"override": "only approvals take one"}, "body.override"),
        ("/api/v1/plans/a%20b/approve", {}, "path plan_id"),
        ("/api/v1/alerts/NOT-HEX/silence", {"minutes": 5}, "path fingerprint"),
        ("/api/v1/alerts/0123456789abcdef/silence", {"minutes": 10**30}, "body.minutes"),
        ("/api/v1/quarantine/retry", {"path": ""}, "body.path"),
    ],
)
def test_every_body_is_checked_before_anything_is_done(
    api: ServedApi, path: str, body: dict[str, Any], where: str
) -> None:
    """Was: the audit row was stored, then Month.parse raised: an action that never happened was recorded."""
    response = httpx.post(api.url + path, json=body, headers=AUTH, timeout=10)
    assert response.status_code == 400, response.text
    assert response.json()["where"] == where
    assert response.headers["connection"] == "close"
    assert api.controller.acted == []


def test_unknown_paths_and_methods_get_json_errors(api: ServedApi) -> None:
    missing = httpx.get(f"{api.url}/nope", timeout=10)
    assert (missing.status_code, missing.json()) == (404, {"error": "not found", "where": "path"})
    wrong = httpx.delete(f"{api.url}/api/v1/reviews", headers=AUTH, timeout=10)
    assert wrong.status_code == 405
    assert wrong.json()["where"] == "method"
    assert wrong.headers["allow"] == "POST"


def test_headers_too_large_get_431(api: ServedApi) -> None:
    big = b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Big: " + b"a" * 17_000
    for request in (big + b"\r\n\r\n", big):  # arrived whole (measured by the app); still arriving (by h11)
        status, answer = _answer(exchange(api, request, timeout=5))
        assert status == 431
        assert answer["where"] == "headers"


@dataclass
class HeldController(RecordingController):
    """Acts only once `release` is set, as when a job holds the service's write lock."""

    release: threading.Event = field(default_factory=threading.Event)
    entered: threading.Semaphore = field(default_factory=lambda: threading.Semaphore(0))

    def act(self, request: Request) -> dict[str, Any]:
        self.entered.release()
        assert self.release.wait(30), "never released"
        return super().act(request)


def _post_in_thread(url: str, results: list[int]) -> threading.Thread:
    def go() -> None:
        results.append(httpx.post(url, json={"reason": "r"}, headers=AUTH, timeout=30).status_code)

    thread = threading.Thread(target=go)
    thread.start()
    return thread


def test_gets_answer_and_extra_posts_are_refused_while_actions_wait_for_the_lock() -> None:
    """Was: unbounded threads. Now actions beyond the limit get 503 (JSON, Retry-After), and
    /healthz and /metrics answer while actions wait."""
    held = HeldController()
    with served_api({"alice": TOKEN}, controller=held, max_in_flight=2, ready=True) as api:
        results: list[int] = []
        threads = [_post_in_thread(f"{api.url}/api/v1/plans/p-{i}/approve", results) for i in range(2)]
        for _ in threads:
            assert held.entered.acquire(timeout=10)
        assert httpx.get(f"{api.url}/healthz", timeout=5).status_code == 200
        assert httpx.get(f"{api.url}/metrics", timeout=5).status_code == 200
        assert httpx.get(f"{api.url}/readyz", timeout=5).status_code == 200
        busy = httpx.post(f"{api.url}/api/v1/plans/p-9/approve", json={}, headers=AUTH, timeout=5)
        assert busy.status_code == 503
        assert busy.headers["retry-after"] == "1"
        assert "busy" in busy.json()["error"]
        held.release.set()
        for thread in threads:
            thread.join(30)
        assert results == [200, 200]
        assert sorted(r.target for r in held.acted) == ["p-0", "p-1"]


def test_stopping_answers_the_requests_in_flight_then_closes() -> None:
    held = HeldController()
    ctx = ApiContext(CollectorRegistry(), Tokens({"alice": TOKEN}), held, threading.Event(), lambda: True)
    server = ApiServer(ctx).start()
    results: list[int] = []
    thread = _post_in_thread(f"{server.url}/api/v1/plans/p-1/approve", results)
    assert held.entered.acquire(timeout=10)
    stopping = threading.Thread(target=server.stop)
    stopping.start()
    held.release.set()
    thread.join(30)
    stopping.join(60)
    assert results == [200]
    assert not server.thread.is_alive()
    with pytest.raises(httpx.ConnectError):
        httpx.get(f"{server.url}/healthz", timeout=5)


def test_actions_waiting_for_the_lock_hold_a_bounded_number_of_threads() -> None:
    """Was: one thread per connection, without bound. Ten actions waiting hold ACTION_THREADS worker
    threads; the rest wait their turn on the event loop, holding none."""
    held = HeldController()
    with served_api({"alice": TOKEN}, controller=held, ready=True) as api:
        results: list[int] = []
        threads = [_post_in_thread(f"{api.url}/api/v1/plans/p-{i}/approve", results) for i in range(10)]
        for _ in range(ACTION_THREADS):
            assert held.entered.acquire(timeout=10)
        assert not held.entered.acquire(timeout=0.5)  # a fifth action is not running: no thread for it
        assert httpx.get(f"{api.url}/healthz", timeout=5).status_code == 200
        held.release.set()
        for thread in threads:
            thread.join(30)
        assert results == [200] * 10
