"""The Grafana dashboard's PromQL against a real Prometheus scraping the running service.

Prometheus (Debian's) scrapes the served day's /metrics (the session's `served` service, so no second
service is built) as job `gpusteward`, the job name the ServiceMonitor gives it. Every panel's every
query, and each template variable's, must parse and return at least one series: a renamed metric or
label, or a `job` label that Prometheus moved to `exported_job`, fails here.
"""

from __future__ import annotations

import json
import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from tests.real import require_binary, stop
from tests.realcomponents.conftest import free_port, wait_ready
from tests.service.serve_helpers import ServedDay

pytestmark = pytest.mark.slow  # shares the served day (minutes), scheduled with it

DASHBOARD = Path(__file__).resolve().parents[2] / "deploy/kubernetes/base/grafana/gpusteward-dashboard.json"
JOB = "gpusteward"
RATE_INTERVAL = "30s"  # what Grafana's $__rate_interval is at this scrape interval: 4 x 2 s, rounded up
SCRAPES = 4  # scrapes to wait for before querying, so every rate() has two samples


def panel_queries(dashboard: dict[str, Any]) -> list[tuple[str, str]]:
    """(panel title, PromQL) of every query target, rows' nested panels included."""
    out: list[tuple[str, str]] = []
    for panel in dashboard["panels"]:
        for p in [panel, *panel.get("panels", [])]:
            out.extend((p["title"], t["expr"]) for t in p.get("targets", []))
    return out


def substitute(expr: str, month: str) -> str:
    text = expr.replace("$__rate_interval", RATE_INTERVAL).replace("$job", JOB).replace("$month", month)
    assert "$" not in text, f"a variable the dashboard does not define: {expr}"
    return text


@pytest.fixture(scope="module")
def prometheus(served: ServedDay, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    binary = require_binary("prometheus", package="prometheus")
    base = tmp_path_factory.mktemp("grafana-prom")
    target = urlparse(served.base).netloc
    (base / "prometheus.yml").write_text(
        "global:\n  scrape_interval: 2s\n  scrape_timeout: 2s\n"
        f"scrape_configs:\n  - job_name: {JOB}\n    static_configs:\n      - targets: ['{target}']\n"
    )
    port = free_port()
    log = base / "prometheus.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [binary, f"--config.file={base / 'prometheus.yml'}", f"--storage.tsdb.path={base / 'data'}",
             f"--web.listen-address=127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(f"{url}/-/ready", proc, log)
        deadline = time.monotonic() + 120  # a hang guard, not a speed limit
        while time.monotonic() < deadline:
            scraped = query(url, f'sum_over_time(up{{job="{JOB}"}}[5m])')
            if scraped and float(scraped[0]["value"][1]) >= SCRAPES:
                break
            time.sleep(0.5)
        else:
            pytest.fail(f"Prometheus never scraped {target} {SCRAPES} times:\n{log.read_text()[-2000:]}")
        yield url
    finally:
        stop(proc)


def query(url: str, promql: str) -> list[dict[str, Any]]:
    answer = httpx.get(f"{url}/api/v1/query", params={"query": promql}, timeout=30)
    body = answer.json()
    assert body["status"] == "success", f"{promql}: {body.get('errorType')}: {body.get('error')}"
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def label_values(url: str, label: str, match: str) -> list[str]:
    answer = httpx.get(f"{url}/api/v1/label/{label}/values", params={"match[]": match}, timeout=30).json()
    assert answer["status"] == "success", answer
    values: list[str] = answer["data"]
    return values


def test_every_panel_query_parses_and_returns_series(prometheus: str) -> None:
    dashboard = json.loads(DASHBOARD.read_text())
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    assert set(variables) == {"datasource", "job", "month"}
    # The variables' own queries: label_values(METRIC{...}, LABEL), as Grafana runs them.
    assert JOB in label_values(prometheus, "job", "gpusteward_job_up")
    month_query = re.fullmatch(r"label_values\((.+), (\w+)\)", variables["month"]["definition"])
    assert month_query
    months = label_values(prometheus, month_query.group(2), substitute(month_query.group(1), ""))
    assert months == ["2026-10"]
    empty: list[str] = []
    checked = 0
    for title, expr in panel_queries(dashboard):
        checked += 1
        if not query(prometheus, substitute(expr, months[-1])):
            empty.append(f"{title}: {expr}")
    assert checked >= 15
    assert empty == [], "panels whose query returns no series:\n" + "\n".join(empty)
    # `or vector(0)` answers even for a metric that is gone: every metric a query names must be there.
    names = {n for _, expr in panel_queries(dashboard) for n in re.findall(r"\b(gpusteward_\w+|up)\{", expr)}
    assert len(names) >= 12
    missing = sorted(n for n in names if not query(prometheus, f'{n}{{job="{JOB}"}}'))
    assert missing == []


def test_a_query_that_does_not_parse_is_caught(prometheus: str) -> None:
    with pytest.raises(AssertionError, match="bad_data"):
        query(prometheus, "sum(gpusteward_job_up{")
