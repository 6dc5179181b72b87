"""Hostile requests to the control API: each gets a JSON answer with a 4xx status, never a dropped or
held connection, and a refused request is never audited as an action."""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest
from prometheus_client import CollectorRegistry

from service.api import MAX_BODY, ApiContext, Request, Tokens, make_server

TOKEN = "alice-secret-token"
FINGERPRINT = "0123456789abcdef"


@dataclass
class RecordingController:
    """Audits (records) every request it is asked to act on."""

    audited: list[Request] = field(default_factory=list)

    def now(self) -> datetime:
        return datetime(2026, 11, 2, tzinfo=UTC)

    def act(self, request: Request) -> dict[str, Any]:
        self.audited.append(request)
        return {"action": request.action, "target": request.target}


@dataclass
class Api:
    host: str
    port: int
    controller: RecordingController


@pytest.fixture
def api() -> Iterator[Api]:
    controller = RecordingController()
    ctx = ApiContext(
        registry=CollectorRegistry(),
        tokens=Tokens({"alice": TOKEN}),
        controller=controller,
        ready=threading.Event(),
        healthy=lambda: True,
        read_timeout_s=1.0,
    )
    server = make_server(ctx)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield Api("127.0.0.1", server.server_address[1], controller)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def raw(api: Api, path: str, body: bytes, *, length: str | None = None, timeout: float = 10.0) -> tuple[int, Any]:
    """Send one POST as bytes; return the status and the JSON answer (fails on a dropped connection)."""
    head = (
        f"POST {path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body) if length is None else length}\r\nConnection: close\r\n\r\n"
    ).encode()
    answer = exchange(api, head + body, timeout=timeout)
    assert answer, "the server dropped the connection without an answer"
    status_line, _, rest = answer.partition(b"\r\n")
    headers, _, payload = rest.partition(b"\r\n\r\n")
    assert b"application/json" in headers.lower()
    return int(status_line.split()[1]), json.loads(payload)


def exchange(api: Api, data: bytes, *, timeout: float = 10.0) -> bytes:
    """Send `data`, read the answer until the server closes the connection."""
    with socket.create_connection((api.host, api.port), timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


def post(api: Api, path: str, data: Any) -> tuple[int, Any]:
    return raw(api, path, json.dumps(data).encode())


def test_an_impossible_month_is_refused_before_it_is_audited(api: Api) -> None:
    status, body = post(api, "/api/v1/reviews", {"month": "2026-13"})
    assert status == 400
    assert "month" in body["error"]
    assert api.controller.audited == []
    assert post(api, "/api/v1/reviews", {"month": "2026-10"})[0] == 202
    assert [r.month for r in api.controller.audited] == ["2026-10"]


@pytest.mark.parametrize("minutes", ["1e26", "100000000000000000000000000", "NaN", "-1", "true", "1.5"])
def test_a_silence_length_out_of_range_is_refused(api: Api, minutes: str) -> None:
    body = f'{{"minutes": {minutes}}}'.encode()
    status, answer = raw(api, f"/api/v1/alerts/{FINGERPRINT}/silence", body)
    assert status == 400, answer
    assert api.controller.audited == []


@pytest.mark.parametrize("length", ["abc", "-1", "1e3", "0x10", "99999999999999999999999"])
def test_a_malformed_content_length_is_refused(api: Api, length: str) -> None:
    status, answer = raw(api, "/api/v1/reviews", b'{"month": "2026-10"}', length=length)
    assert status in {400, 413}, answer
    assert "Content-Length" in answer["error"] or "too large" in answer["error"]
    assert api.controller.audited == []


def test_a_body_shorter_than_its_content_length_times_out_with_408(api: Api) -> None:
    status, answer = raw(api, "/api/v1/reviews", b'{"month": "2026-10"}', length="100", timeout=15)
    assert status == 408
    assert "time" in answer["error"]
    assert api.controller.audited == []


def test_a_deeply_nested_body_is_refused(api: Api) -> None:
    deep = b'{"month": ' + b"[" * 20_000 + b"]" * 20_000 + b"}"
    status, answer = raw(api, "/api/v1/reviews", deep)
    assert status == 400
    assert "nest" in answer["error"]


def test_a_body_over_the_limit_is_refused_with_413(api: Api) -> None:
    big = json.dumps({"reason": "x" * (MAX_BODY + 1)}).encode()
    status, answer = raw(api, "/api/v1/reviews", big)
    assert status == 413
    assert "too large" in answer["error"]


@pytest.mark.parametrize("body", [b"\xff\xfe", b"[1, 2]", b"{", b'{"reason": 5}', b"null"])
def test_bodies_that_are_not_a_json_object_are_refused(api: Api, body: bytes) -> None:
    assert raw(api, "/api/v1/reviews", body)[0] == 400


def test_a_malformed_request_line_gets_a_json_error(api: Api) -> None:
    answer = exchange(api, b"POST /api/v1/reviews HTTP/9.9 extra\r\n\r\n")
    status_line, _, rest = answer.partition(b"\r\n")
    assert int(status_line.split()[1]) == 400
    assert json.loads(rest.partition(b"\r\n\r\n")[2])["error"]


def test_an_http_0_9_request_gets_an_http_1_refusal(api: Api) -> None:
    """Found by the fuzzer: a path with a bare newline made `GET /path` an HTTP/0.9 request, answered
    without a status line or headers. Nothing here speaks HTTP/0.9."""
    answer = exchange(api, b"GET /metrics\r\n\r\n")
    status_line, _, rest = answer.partition(b"\r\n")
    assert status_line.split()[:2] in ([b"HTTP/1.0", b"400"], [b"HTTP/1.1", b"400"])
    assert "HTTP/0.9" in json.loads(rest.partition(b"\r\n\r\n")[2])["error"]


def test_a_quarantine_retry_needs_a_path(api: Api) -> None:
    for body in ({}, {"path": ""}, {"path": 5}, {"path": "a\u0000b"}):
        assert post(api, "/api/v1/quarantine/retry", body)[0] == 400
    assert api.controller.audited == []
    status, _ = post(api, "/api/v1/quarantine/retry", {"path": "/data/in/x.om", "reason": "fixed"})
    assert status == 202
    assert [(r.action, r.target) for r in api.controller.audited] == [("import.retry", "/data/in/x.om")]
