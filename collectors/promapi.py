"""A Prometheus HTTP API client for range queries, with retries on 5xx and timeouts.

Works against Prometheus and against servers that speak its API (VictoriaMetrics, Thanos, Mimir).
`flavor()` tells the range-window convention the server uses, which `collectors.backfill` needs
to make both return exactly the stored samples of each minute: Prometheus 2.x windows are closed
(`[t-w, t]`), VictoriaMetrics and Prometheus 3.x windows are left-open (`(t-w, t]`).
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import httpx

CLOSED = "closed"  # Prometheus 2.x: [t - w, t]
LEFT_OPEN = "left-open"  # VictoriaMetrics, Prometheus 3.x: (t - w, t]
MAX_POINTS = 11_000  # Prometheus rejects a range query with more points per series


class PromApiError(Exception):
    """The server refused the query (4xx or an error status) or answered something that is not a
    range-query result; retrying will not help."""


class PromUnavailableError(Exception):
    """The server failed or did not answer after every retry (5xx, timeouts, connection errors)."""


@dataclass(frozen=True)
class RangeSeries:
    """One series of a range query: its labels (without `__name__`) and its points."""

    labels: tuple[tuple[str, str], ...]
    times_ms: list[int]
    values: list[float]


def rfc3339(ms: int) -> str:
    """Milliseconds since the epoch as RFC 3339 with milliseconds (parsed exactly by both servers)."""
    moment = datetime.fromtimestamp(ms // 1000, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{ms % 1000:03d}Z"


class PromClient:
    """Range queries against one server; `sleep` and `transport` are injectable for tests."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float = 60.0,
        retries: int = 4,
        backoff_s: float = 1.0,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.url = url.rstrip("/")
        self.retries = retries
        self.backoff_s = backoff_s
        self.requests = 0
        self._sleep = sleep
        self._http = httpx.Client(timeout=timeout_s, transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> PromClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _get(self, path: str, params: dict[str, str] | None = None) -> httpx.Response:
        """GET with up to `retries` retries on 5xx, timeouts and connection errors, backing off."""
        last = ""
        for attempt in range(self.retries + 1):
            if attempt:
                self._sleep(self.backoff_s * 2 ** (attempt - 1))
            self.requests += 1
            try:
                response = self._http.get(self.url + path, params=params)
            except httpx.TimeoutException as exc:
                last = f"timeout: {exc!r}"
                continue
            except httpx.TransportError as exc:
                last = f"connection failed: {exc!r}"
                continue
            except httpx.RequestError as exc:  # a body that cannot be decoded (a proxy cut it short)
                last = f"unreadable answer: {exc!r}"
                continue
            if response.status_code >= 500:
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                continue
            return response
        raise PromUnavailableError(f"{self.url}{path}: no answer after {self.retries + 1} tries; last: {last}")

    def query_range(self, query: str, start_ms: int, end_ms: int, step_s: int) -> list[RangeSeries]:
        """Evaluate `query` at start, start + step, ... <= end; points per series must stay <= 11,000."""
        points = (end_ms - start_ms) // (step_s * 1000) + 1
        if points > MAX_POINTS:
            raise ValueError(f"{points} points per series is over the {MAX_POINTS} limit: split the range")
        params = {"query": query, "start": rfc3339(start_ms), "end": rfc3339(end_ms), "step": f"{step_s}s"}
        # nocache: VictoriaMetrics would otherwise align start to the step for its cache.
        response = self._get("/api/v1/query_range", params | {"nocache": "1"})
        body = _json(response)
        if response.status_code != httpx.codes.OK or body.get("status") != "success":
            raise PromApiError(
                f"{self.url}: {query!r}: HTTP {response.status_code} {body.get('errorType', '')}: "
                f"{body.get('error', response.text[:200])}"
            )
        try:
            result = body["data"]["result"]
            if not isinstance(result, list):
                raise TypeError(f"'data.result' is a {type(result).__name__}, expected a list")
            return [_series(item) for item in result]
        except (KeyError, TypeError, ValueError, OverflowError) as exc:
            raise PromApiError(
                f"{self.url}: {query!r}: HTTP {response.status_code}: not a range-query answer "
                f"({type(exc).__name__}: {exc})"[:400]
            ) from None

    def flavor(self) -> str:
        """CLOSED for Prometheus 2.x, LEFT_OPEN for Prometheus 3.x and VictoriaMetrics."""
        metrics = self._get("/metrics").text
        if "vm_app_version" in metrics or "vm_rows" in metrics:
            return LEFT_OPEN
        found = re.search(r'prometheus_build_info\{[^}]*version="(\d+)\.', metrics)
        if found:
            return CLOSED if int(found.group(1)) < 3 else LEFT_OPEN
        raise PromApiError(
            f"{self.url}: cannot tell Prometheus from VictoriaMetrics by /metrics; give the window convention"
        )


def _json(response: httpx.Response) -> dict[str, Any]:
    try:
        body = response.json()
    except ValueError:
        return {}
    return body if isinstance(body, dict) else {}


def _series(item: Any) -> RangeSeries:
    """One `matrix` result; a malformed one raises KeyError, TypeError or ValueError."""
    metric = item["metric"]
    if not isinstance(metric, dict) or not all(isinstance(v, str) for v in metric.values()):
        raise TypeError(f"'metric' is not an object of strings: {metric!r}"[:120])
    labels = tuple(sorted((k, v) for k, v in metric.items() if k != "__name__"))
    points = item.get("values", [])
    if not isinstance(points, list):
        raise TypeError(f"'values' is a {type(points).__name__}, expected a list")
    times, values = [], []
    for t, v in points:
        times.append(round(float(t) * 1000))
        values.append(_float(v))
    return RangeSeries(labels, times, values)


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan
