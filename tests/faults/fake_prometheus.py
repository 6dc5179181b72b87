"""A Prometheus HTTP API on 127.0.0.1 that answers the backfill's range queries, with faults on demand.

It holds no samples: for each DCGM field it knows the per-minute value of every GPU (a pure function
of the GPU and the minute) and answers `sum_over_time`, `count_over_time`, `max_over_time` and
`last_over_time` over one minute as Prometheus would for four samples of that value. Data exist for
minutes in [start, end). `faults` is consumed one per request ("503", "500", "hang", "garbage",
"truncated"); when it is empty, `then` says what every later request gets ("ok" by default).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler
from urllib.parse import parse_qs, urlparse

from collectors.backfill import MINUTE_MS, to_ms
from tests.collectors.local_http import http_server, status

_QUERY = re.compile(r"^(\w+)\((\w+)(?:\{[^}]*\})?\[[^\]]+\]\)$")
HOSTS = ("node-a", "node-b")
GPUS = 2
SAMPLES_PER_MINUTE = 4
XID_AT = (1, 1, 13)  # (host index, gpu, minute) where an XID 79 appears


def value(name: str, host: int, gpu: int, minute: int) -> float:
    if name == "DCGM_FI_DEV_XID_ERRORS":
        return 79.0 if (host, gpu, minute) == XID_AT else 0.0
    return float((minute * 7 + host * 3 + gpu + len(name)) % 97)


def _ms(text: str) -> int:
    return to_ms(datetime.fromisoformat(text.replace("Z", "+00:00")))


@dataclass
class FakePrometheus:
    start: datetime
    end: datetime
    faults: list[str] = field(default_factory=list)
    then: str = "ok"
    release: threading.Event = field(default_factory=threading.Event)
    served: list[str] = field(default_factory=list)  # the mode each query_range request got
    lock: threading.Lock = field(default_factory=threading.Lock)

    def __call__(self, h: BaseHTTPRequestHandler) -> None:
        url = urlparse(h.path)
        if url.path != "/api/v1/query_range":
            status(404, b"not found\n")(h)
            return
        with self.lock:
            mode = self.faults.pop(0) if self.faults else self.then
            self.served.append(mode)
        if mode == "hang":
            self.release.wait(10)
            return
        if mode in ("500", "503"):
            status(int(mode), b"upstream connect error or disconnect/reset before headers\n")(h)
            return
        body = json.dumps(self.answer(parse_qs(url.query))).encode()
        if mode == "garbage":
            body = b"<html>502 Bad Gateway</html>"
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body) + (1000 if mode == "truncated" else 0)))
        h.end_headers()
        h.wfile.write(body[: len(body) // 2] if mode == "truncated" else body)
        if mode == "truncated":
            h.close_connection = True

    def answer(self, params: dict[str, list[str]]) -> dict[str, object]:
        m = _QUERY.match(params["query"][0])
        if m is None:
            return {"status": "error", "errorType": "bad_data", "error": f"cannot parse {params['query'][0]!r}"}
        fn, name = m.groups()
        lo, hi = _ms(params["start"][0]), _ms(params["end"][0])
        first, last = to_ms(self.start) // MINUTE_MS, to_ms(self.end) // MINUTE_MS
        result = []
        for host, node in enumerate(HOSTS):
            for gpu in range(GPUS):
                points = []
                for t in range(lo, hi + 1, MINUTE_MS):  # step 60 s, each at a minute's last millisecond
                    minute = (t - (MINUTE_MS - 1)) // MINUTE_MS
                    if not first <= minute < last:
                        continue
                    v = value(name, host, gpu, minute - first)
                    rolled = {"sum_over_time": v * SAMPLES_PER_MINUTE, "count_over_time": SAMPLES_PER_MINUTE}
                    points.append([t / 1000, repr(float(rolled.get(fn, v)))])
                if points:
                    labels = {
                        "__name__": name,
                        "gpu": str(gpu),
                        "Hostname": node,
                        "UUID": f"GPU-{host}-{gpu}",
                        "modelName": "NVIDIA H100",
                        "cluster": "east",
                        "instance": f"{node}:9400",
                    }
                    result.append({"metric": labels, "values": points})
        return {"status": "success", "data": {"resultType": "matrix", "result": result}}


@contextmanager
def serving(fake: FakePrometheus) -> Iterator[str]:
    """Serve `fake`; yields its base URL. Hanging requests are released when the block ends."""
    with http_server(fake) as address:
        try:
            yield f"http://{address}"
        finally:
            fake.release.set()
