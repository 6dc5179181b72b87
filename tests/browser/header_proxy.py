"""A sign-in proxy's stand-in for the browser tests: it adds identity headers to every request it forwards,
the WebSocket handshake included, as oauth2-proxy or an ingress with auth does.

Playwright's `extra_http_headers` cannot stand in for it: Chromium 150 (Debian 12's package, 2026-12) sends
them on page and fetch requests but not on the WebSocket handshake, which is where Streamlit reads
`st.context.headers`. Headers of the same names the browser sends are dropped, as a proxy does, so a page
cannot forge them. Each plain request gets its own connection (`Connection: close`), so each passes
through here and gets the headers; an upgrade keeps its `Connection: Upgrade` and is piped both ways.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager, suppress

MAX_HEAD = 64 * 1024


async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    with suppress(ConnectionError, asyncio.IncompleteReadError, OSError):
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    with suppress(ConnectionError, OSError):
        writer.close()


def _rewritten(head: bytes, headers: Mapping[str, str]) -> bytes:
    request, *fields = [line for line in head.decode("latin-1").split("\r\n") if line]
    names = {name.lower() for name in headers}
    fields = [f for f in fields if f.split(":", 1)[0].strip().lower() not in names]
    if not any(f.lower().startswith("upgrade:") for f in fields):
        fields = [f for f in fields if not f.lower().startswith("connection:")] + ["Connection: close"]
    fields += [f"{name}: {value}" for name, value in headers.items()]
    return ("\r\n".join([request, *fields]) + "\r\n\r\n").encode("latin-1")


@contextmanager
def header_proxy(upstream: str, headers: Mapping[str, str]) -> Iterator[str]:
    """The proxy's URL (http://127.0.0.1:PORT) in front of `upstream` (http://127.0.0.1:PORT), until exit."""
    host, port = upstream.removeprefix("http://").rstrip("/").split(":")
    loop = asyncio.new_event_loop()
    servers: list[asyncio.Server] = []
    writers: set[asyncio.StreamWriter] = set()  # every open socket, closed on exit

    async def client(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writers.add(writer)
        try:
            head = await reader.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            writer.close()
            return
        up_reader, up_writer = await asyncio.open_connection(host, int(port))
        writers.add(up_writer)
        up_writer.write(_rewritten(head, headers))
        await asyncio.gather(_pipe(reader, up_writer), _pipe(up_reader, writer))

    async def shutdown() -> None:
        servers[0].close()
        for w in writers:
            w.close()
        for w in writers:
            with suppress(ConnectionError, OSError):
                await w.wait_closed()
        tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def serve() -> None:
        servers.append(await asyncio.start_server(client, "127.0.0.1", 0, limit=MAX_HEAD))

    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    asyncio.run_coroutine_threadsafe(serve(), loop).result(timeout=10)
    try:
        yield f"http://127.0.0.1:{servers[0].sockets[0].getsockname()[1]}"
    finally:
        asyncio.run_coroutine_threadsafe(shutdown(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
