"""The control API's answer times on loopback: GET /healthz and /metrics when idle and while actions wait
for the write lock (a job holding it), and an accepted POST.

The controller only records, so the figures are the HTTP stack's (uvicorn, Starlette, the API's checks),
not the warehouse's nor the write lock's.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import httpx

from tests.service.api_rig import served_api
from tests.service.test_api_limits import AUTH, TOKEN, HeldController

WAITING_ACTIONS = 8


def _summary(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_ms": ordered[len(ordered) // 2] * 1000,
        "p99_ms": ordered[min(len(ordered) - 1, round(0.99 * len(ordered)))] * 1000,
        "max_ms": ordered[-1] * 1000,
    }


def _times(client: httpx.Client, method: str, url: str, count: int, **kwargs: Any) -> list[float]:
    samples = []
    for _ in range(count):
        began = time.perf_counter()
        response = client.request(method, url, **kwargs)
        samples.append(time.perf_counter() - began)
        if response.status_code >= 300:
            raise RuntimeError(f"{method} {url} answered {response.status_code}: {response.text[:200]}")
    return samples


def run(quick: bool) -> dict[str, Any]:
    count = 100 if quick else 1000
    held = HeldController()
    out: dict[str, Any] = {"requests_each": count, "actions_waiting_on_the_lock": WAITING_ACTIONS}
    with served_api({"alice": TOKEN}, controller=held, ready=True) as api, httpx.Client(timeout=30) as client:
        for path in ("/healthz", "/metrics"):
            out[f"GET {path} idle"] = _summary(_times(client, "GET", api.url + path, count))
        waiting = [
            threading.Thread(target=httpx.post, args=(f"{api.url}/api/v1/plans/p-{i}/approve",),
                             kwargs={"json": {}, "headers": AUTH, "timeout": 60})
            for i in range(WAITING_ACTIONS)
        ]
        for thread in waiting:
            thread.start()
        for _ in range(4):  # the action threads are busy waiting; the rest queue for one
            held.entered.acquire(timeout=30)
        for path in ("/healthz", "/metrics"):
            out[f"GET {path} while actions wait"] = _summary(_times(client, "GET", api.url + path, count))
        held.release.set()
        for thread in waiting:
            thread.join(60)
        posts = _times(client, "POST", f"{api.url}/api/v1/reviews", count, json={"month": "2026-10"}, headers=AUTH)
        out["POST /api/v1/reviews"] = _summary(posts)
    return out
