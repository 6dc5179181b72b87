"""uvicorn's HTTP/1.1 protocol (h11), with the API's manners where uvicorn answers on its own.

uvicorn answers a request it cannot parse (a malformed request line, a bad Content-Length, headers
too long) with a plain-text "Invalid HTTP request received." and waits forever for headers that
trickle in. Here such a request gets the API's JSON error naming h11's reason and where it was
found, with h11's status (400, 431 for headers too long, 501 for a transfer coding it does not
speak), and a connection whose request line and headers have not arrived within the read
timeout is answered 408 (or closed, when nothing arrived at all). A client that half-closes its
side after sending a request still gets the answer, as it did from http.server.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

from service.api import READ_TIMEOUT_S


class _Connection(h11.Connection):
    """h11's connection, remembering the last error it raised on the peer's bytes (for the answer)."""

    last_error: h11.RemoteProtocolError | None = None

    def next_event(self) -> Any:
        try:
            return super().next_event()
        except h11.RemoteProtocolError as exc:
            self.last_error = exc
            raise


def _where(reason: str) -> str:
    for header in ("Content-Length", "Transfer-Encoding", "Host"):
        if header.lower() in reason.lower():
            return f"header {header}"
    if "request line" in reason or "method" in reason or "target" in reason:
        return "request line"
    if "buffer" in reason or "header" in reason:
        return "headers"
    if "chunk" in reason or "body" in reason:
        return "body"
    return "request"


class JsonErrorH11Protocol(H11Protocol):
    header_timeout_s: float = READ_TIMEOUT_S

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._h11 = _Connection(h11.SERVER, self.config.h11_max_incomplete_event_size or 16 * 1024)
        self.conn = self._h11
        self._header_timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_header_timer()

    def data_received(self, data: bytes) -> None:
        self._arm_header_timer()
        super().data_received(data)
        if self.conn.their_state is not h11.IDLE:  # the request line and headers are in
            self._disarm_header_timer()

    def eof_received(self) -> bool | None:  # type: ignore[override]
        """A client that half-closes after its request (`shutdown(SHUT_WR)`, `nc -N`) still gets its answer.

        uvicorn closes the transport at EOF, dropping the answer of a request in flight."""
        if self.scheme == "https" or self.cycle is None or self.cycle.response_complete:
            return None  # nothing to answer (or TLS, which cannot half-close): asyncio closes the transport
        try:
            self._h11.receive_data(b"")  # h11 learns the client sent all it will, so the answer ends the connection
        except RuntimeError:
            return None
        return True

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_header_timer()
        super().connection_lost(exc)

    def _arm_header_timer(self) -> None:
        if self._header_timer is None and self.conn.their_state is h11.IDLE:
            self._header_timer = self.loop.call_later(self.header_timeout_s, self._headers_timed_out)

    def _disarm_header_timer(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _headers_timed_out(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.IDLE or self.conn.our_state is not h11.IDLE:
            return
        if self.conn.trailing_data[0]:  # part of a request arrived: say why it is cut off
            limit = f"{self.header_timeout_s:g}"
            self._answer(408, f"timed out: the request line and headers did not arrive within {limit} s", "headers")
        else:
            self.transport.close()

    def send_400_response(self, msg: str) -> None:
        """uvicorn's answer to bytes h11 cannot parse, as the API's JSON error with h11's reason."""
        exc = self._h11.last_error
        reason = str(exc) if exc is not None and str(exc) else msg
        status = exc.error_status_hint if exc is not None else 400
        text = (f"malformed HTTP request: {reason}; send an HTTP/1.1 (or 1.0) request line and headers "
                "(HTTP/0.9 and other versions are not spoken here)")
        self._answer(status, text, _where(reason))

    def _answer(self, status: int, message: str, where: str) -> None:
        body = json.dumps({"error": message, "where": where}).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
            (b"connection", b"close"),
        ]
        try:
            for event in (h11.Response(status_code=status, headers=headers), h11.Data(data=body), h11.EndOfMessage()):
                self.transport.write(self.conn.send(event) or b"")
        except h11.LocalProtocolError:
            pass  # a response had already begun: nothing more can be said on this connection
        self.transport.close()


def json_error_protocol(read_timeout_s: float) -> type[JsonErrorH11Protocol]:
    """The protocol class for one server, its header timeout bound."""
    return type("ApiH11Protocol", (JsonErrorH11Protocol,), {"header_timeout_s": read_timeout_s})
