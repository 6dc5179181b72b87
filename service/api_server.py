"""Serve the API app with uvicorn in a thread: bound before it returns, TLS off loopback, stopped gracefully.

Loopback addresses are served over plain HTTP. Any other address needs a certificate and key
(`service.tls_cert` / `service.tls_key`, or `--tls-cert` / `--tls-key`), or an explicit
`--insecure-listen`, which is logged as a warning at every start: bearer tokens and approvals
would otherwise cross the network in clear text without anyone having chosen that.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import uvicorn

from service.api import ApiContext
from service.api_app import MAX_HEADER_BYTES, MAX_IN_FLIGHT, make_app
from service.api_protocol import json_error_protocol

log = logging.getLogger("gpusteward.service.api")

KEEP_ALIVE_S = 5  # an idle keep-alive connection is closed after this
GRACEFUL_STOP_S = 30  # on stop, requests in flight get this long to finish
MAX_CONNECTIONS = 4 * MAX_IN_FLIGHT  # uvicorn's own backstop (answered 503 in plain text)


class ListenError(ValueError):
    """The listen address and TLS options do not go together."""


@dataclass(frozen=True)
class Tls:
    certfile: Path
    keyfile: Path


def is_loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a host name other than localhost may resolve anywhere


def listen_refusal(host: str, tls: Tls | None, insecure: bool) -> str | None:
    """Why plain HTTP on `host` is refused (None: it is not)."""
    if tls is not None or is_loopback(host) or insecure:
        return None
    return (
        f"listen address {host} is not loopback: give a TLS certificate and key (service.tls_cert and "
        "service.tls_key, or --tls-cert and --tls-key), or --insecure-listen to serve plain HTTP anyway"
    )


def check_listen(host: str, tls: Tls | None, insecure: bool) -> None:
    """Refuse plain HTTP on a non-loopback address unless it was asked for; warn (every start) when it was."""
    refusal = listen_refusal(host, tls, insecure)
    if refusal is not None:
        raise ListenError(refusal)
    if tls is not None or is_loopback(host):
        return
    log.warning(
        "serving the control API on %s over plain HTTP (--insecure-listen): bearer tokens and approvals cross "
        "the network unencrypted; give --tls-cert and --tls-key, or listen on 127.0.0.1 behind a TLS proxy", host
    )


def _bind(host: str, port: int) -> socket.socket:
    """A listening TCP socket. Made with proto IPPROTO_TCP (socket.create_server leaves 0): asyncio sets
    TCP_NODELAY only on such sockets, and without it a small answer waits ~40 ms for a delayed ACK."""
    address = host.strip("[]")
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((address, port))
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ListenError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from exc
    return sock


class ApiServer:
    """The service's HTTP endpoints on host:port (0: a free port), in a background thread.

    `start()` returns once it accepts connections; `stop()` lets requests in flight finish (at most
    GRACEFUL_STOP_S) and closes the socket. Usable as a context manager."""

    def __init__(
        self,
        ctx: ApiContext,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        tls: Tls | None = None,
        insecure_listen: bool = False,
        max_in_flight: int = MAX_IN_FLIGHT,
    ) -> None:
        check_listen(host, tls, insecure_listen)
        self.tls = tls
        config = uvicorn.Config(
            make_app(ctx, max_in_flight=max_in_flight),
            http=json_error_protocol(ctx.read_timeout_s),
            lifespan="off",
            log_config=None,
            access_log=False,  # request lines only at debug level, below; never headers (tokens)
            server_header=False,
            proxy_headers=False,  # the API never uses the client's address; trust no X-Forwarded-For
            timeout_keep_alive=KEEP_ALIVE_S,
            timeout_graceful_shutdown=GRACEFUL_STOP_S,
            limit_concurrency=max(MAX_CONNECTIONS, 4 * max_in_flight),
            h11_max_incomplete_event_size=MAX_HEADER_BYTES,
            ssl_certfile=str(tls.certfile) if tls else None,
            ssl_keyfile=str(tls.keyfile) if tls else None,
        )
        try:
            config.load()  # a bad certificate or key fails here, in the caller, not in the thread
        except (OSError, ValueError) as exc:
            raise ListenError(f"cannot load the TLS certificate or key: {exc}") from exc
        self._server = uvicorn.Server(config)
        self._socket = _bind(host, port)
        self.host, self.port = self._socket.getsockname()[:2]
        self._thread = threading.Thread(target=self._serve, name="gpusteward-http", daemon=True)
        self._failed: BaseException | None = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"{'https' if self.tls else 'http'}://{host}:{self.port}"

    def _serve(self) -> None:
        try:
            self._server.run(sockets=[self._socket])
        except BaseException as exc:  # SystemExit from uvicorn's start-up included: start() reports it
            self._failed = exc
            log.exception("the HTTP server stopped")

    def start(self, timeout_s: float = 30.0) -> ApiServer:
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self._socket.close()
                raise ListenError(f"the HTTP server did not start on {self.url}: {self._failed!r}")
            time.sleep(0.01)
        return self

    def stop(self) -> None:
        self._server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(GRACEFUL_STOP_S + 5)
        self._socket.close()

    @property
    def thread(self) -> threading.Thread:
        """The thread serving; it ends only after stop() (or when serving failed)."""
        return self._thread

    def __enter__(self) -> ApiServer:
        return self.start()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
