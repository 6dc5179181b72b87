"""Real HTTP servers on 127.0.0.1 for collector tests: each answers GET with a fixed behaviour."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

Reply = Callable[[BaseHTTPRequestHandler], None]
HANG_LIMIT_S = 10.0  # a hanging handler gives up after this, so no thread outlives a test for long


def status(code: int, body: bytes = b"error\n") -> Reply:
    def reply(h: BaseHTTPRequestHandler) -> None:
        h.send_response(code)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return reply


def text(body: bytes, content_type: str = "text/plain; version=0.0.4") -> Reply:
    def reply(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", content_type)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)

    return reply


def gzip_encoded(wire: bytes) -> Reply:
    """Announce `Content-Encoding: gzip` and send `wire` as it is: gzip data, or a plain body (a lie)."""

    def reply(h: BaseHTTPRequestHandler) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "text/plain; version=0.0.4")
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(wire)))
        h.end_headers()
        h.wfile.write(wire)

    return reply


def hang(release: threading.Event) -> Reply:
    """Accept the request and say nothing until `release` is set (or HANG_LIMIT_S passes)."""

    def reply(h: BaseHTTPRequestHandler) -> None:
        release.wait(HANG_LIMIT_S)
        status(200, b"too late\n")(h)

    return reply


class BacklogServer(ThreadingHTTPServer):
    """socketserver listens with a backlog of 5 (in its constructor): concurrent scrapes overflow it and
    each dropped SYN costs a 1 s retransmit. Exporters' Go listeners take them all."""

    daemon_threads = True
    request_queue_size = 1024


@contextmanager
def http_server(reply: Reply) -> Iterator[str]:
    """Serve `reply` on a free 127.0.0.1 port; yields `127.0.0.1:PORT`."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            with suppress(BrokenPipeError, ConnectionResetError):  # the client gave up (a timeout under test)
                reply(self)

        def log_message(self, format: str, *args: object) -> None:
            return

    server = BacklogServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
