"""A local HTTP receiver on 127.0.0.1 that records every request and answers as told."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Request:
    path: str  # with the query
    headers: dict[str, str]
    body: bytes


@dataclass
class Recorder:
    """What the server saw, and what it answers next (status and body)."""

    status: int = 200
    answer: bytes = b"ok"
    requests: list[Request] = field(default_factory=list)
    url: str = ""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def bodies(self) -> list[bytes]:
        with self.lock:
            return [r.body for r in self.requests]


@contextmanager
def recording_server(
    path: str = "/hook", judge: Callable[[Request], tuple[int, bytes]] | None = None
) -> Iterator[Recorder]:
    """`judge`: decides the answer to each request (a verifying receiver) instead of `status`/`answer`."""
    state = Recorder()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            request = Request(self.path, {k.lower(): v for k, v in self.headers.items()}, body)
            with state.lock:
                status, answer = judge(request) if judge is not None else (state.status, state.answer)
                if status < 300:  # a receiver that is down, or refuses, records nothing
                    state.requests.append(request)
            self.send_response(status)
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    state.url = f"http://127.0.0.1:{server.server_address[1]}{path}"
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
