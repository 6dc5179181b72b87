"""The simulated fleet as live dcgm-exporter endpoints on loopback (`gpusteward serve-fleet`).

One HTTP server on 127.0.0.1 answers `GET /<host>/metrics` for every simulated node with what
dcgm-exporter would print at the current minute: text format 0.0.4 without timestamps, the
exporter's labels (`hpc_job` on GPUs a Slurm job holds), values from the same generator as
`simulate` (`TelemetryModel`, seeded, for the plan that starts on the day the server starts).
A node inside the planted exporter outage answers 503; after the plan's last day every node does.
`GET /targets.json` is a Prometheus file_sd document listing every node with its cluster label.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np

from simulator.fleet import GPUS_PER_NODE, Cluster, build_fleet
from simulator.inference import place_replicas, simulate_services
from simulator.plan import DAY_S, make_plan
from simulator.scheduler import schedule
from simulator.telemetry import DayValues, TelemetryModel
from simulator.workload import batch_cap, cluster_jobs, first_job_id
from simulator.write_openmetrics import DCGM_FAMILIES, dcgm_labels

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
# dcgm-exporter declares the energy field a counter (the dumps say `unknown`, see write_openmetrics).
_TYPES = {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": "counter"}


class LiveFleet:
    """The seeded fleet's dcgm-exporter output at any moment of its plan (`days` from `start`)."""

    def __init__(
        self, nodes: int, seed: int, *, start: date | None = None, days: int = 2, clock: Callable[[], float] = time.time
    ) -> None:
        self.fleet = build_fleet(nodes)
        self.clock = clock
        self.start = start or datetime.fromtimestamp(clock(), UTC).date()
        self.plan = make_plan(self.fleet, self.start, days, seed)
        self._lock = threading.Lock()
        self._models: dict[str, TelemetryModel] = {}
        self._days: dict[str, list[DayValues]] = {}
        self._labels = {c.name: dcgm_labels(c) for c in self.fleet.clusters}
        self._where: dict[str, tuple[Cluster, int]] = {}
        for i, c in enumerate(self.fleet.clusters):
            replicas = place_replicas(c) if c.name == "east" else ()
            specs, fillers = cluster_jobs(c, self.plan, replicas)
            runs = schedule(
                c,
                specs,
                [f for f in self.plan.failures if f.cluster == c.name],
                until_s=self.plan.end_s,
                first_id=first_job_id(c, seed),
                batch_cap=batch_cap(c, replicas),
                fillers=fillers,
            )
            series = simulate_services(replicas, runs, self.plan.end_s, seed)
            self._models[c.name] = TelemetryModel(c, runs, series, self.plan, i)
            self._days[c.name] = []
            for h, host in enumerate(c.hosts):
                self._where[host] = (c, h)

    @property
    def hosts(self) -> list[tuple[str, str]]:
        """(cluster, host) of every node."""
        return [(c.name, h) for c in self.fleet.clusters for h in c.hosts]

    def _day(self, cluster: str, index: int) -> DayValues:
        days = self._days[cluster]
        with self._lock:  # the energy counters carry over: days are generated in order, once
            while len(days) <= index:
                days.append(self._models[cluster].day(len(days)))
        return days[index]

    def exposition(self, host: str, now_s: float | None = None) -> str | None:
        """The host's /metrics text at `now_s` (default: the clock); None when it has no data."""
        cluster, h = self._where[host]
        t = self.clock() if now_s is None else now_s
        offset = t - self.plan.start_s
        if offset < 0 or offset >= self.plan.days * DAY_S:
            return None
        d, minute = int(offset // DAY_S), int(offset % DAY_S // 60)
        values = self._day(cluster.name, d)
        slots = range(h * GPUS_PER_NODE, (h + 1) * GPUS_PER_NODE)
        valid = [s for s in slots if values.valid[s, minute]]
        if not valid:
            return None
        head = self._labels[cluster.name].head
        label_sets = []
        for s in valid:
            job = int(values.job[s, minute])
            label_sets.append(head[s] + (f',hpc_job="{job}"' if job else ""))
        out: list[str] = []
        for name, typ, help_text, attr in DCGM_FAMILIES:
            column = values.fb_free if attr == "fb_free" else getattr(values, attr)
            out.append(f"# HELP {name} {help_text}\n# TYPE {name} {_TYPES.get(name, typ)}\n")
            for s, labels in zip(valid, label_sets, strict=True):
                out.append(f"{name}{{{labels}}} {_number(column[s, minute])}\n")
        return "".join(out)

    def targets(self, port: int) -> str:
        """A file_sd document for the fleet served on 127.0.0.1:`port`."""
        groups = [
            {
                "targets": [f"127.0.0.1:{port}"],
                "labels": {"__metrics_path__": f"/{host}/metrics", "cluster": cluster, "host": host},
            }
            for cluster, host in self.hosts
        ]
        return json.dumps(groups, indent=2)


def _number(v: np.generic) -> str:
    x = float(v)
    return str(int(x)) if x.is_integer() and abs(x) < 2**53 else repr(x)


def _handler(fleet: LiveFleet, port: Callable[[], int]) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/targets.json":
                self._send(200, fleet.targets(port()), "application/json")
                return
            parts = self.path.strip("/").split("/")
            if len(parts) != 2 or parts[1] != "metrics" or parts[0] not in fleet._where:
                self._send(404, "no such exporter\n", "text/plain")
                return
            text = fleet.exposition(parts[0])
            if text is None:
                self._send(503, "exporter has no data now (simulated outage or outside the plan)\n", "text/plain")
            else:
                self._send(200, text, CONTENT_TYPE)

        def _send(self, status: int, text: str, content_type: str) -> None:
            body = text.encode()
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:  # noqa: ARG002 - quiet, as exporters are
            return

    return Handler


class _FleetServer(ThreadingHTTPServer):
    daemon_threads = True
    # socketserver listens with a backlog of 5: a scraper opening a connection per node at once overflows
    # it, and each dropped SYN costs a 1 s retransmit (a real exporter's Go listener takes them all). A
    # class attribute, since listen() runs in the constructor.
    request_queue_size = 1024


def serve(fleet: LiveFleet, port: int = 0) -> ThreadingHTTPServer:
    """Bind 127.0.0.1:`port` (0: any free port); call `serve_forever()` or run it in a thread."""
    holder: list[int] = []
    server = _FleetServer(("127.0.0.1", port), _handler(fleet, lambda: holder[0]))
    holder.append(server.server_address[1])
    return server


def scrape_entry(targets_file: str, interval_s: float, *, name: str = "fleet", timeout_s: float = 5) -> str:
    """The `[[service.scrape]]` config entry that scrapes a fleet served with its file_sd list in `targets_file`."""
    return (
        f'\n[[service.scrape]]\nname = "{name}"\nfile_sd = "{targets_file}"\n'
        f'interval = "{interval_s:g}s"\ntimeout = "{timeout_s:g}s"\n'
    )


@contextmanager
def serving(fleet: LiveFleet, targets_out: Path) -> Iterator[int]:
    """The fleet served on a free loopback port in a background thread, its file_sd list written to
    `targets_out`; yields the port and stops the server when the block exits."""
    server = serve(fleet)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    port = int(server.server_address[1])
    targets_out.write_text(fleet.targets(port), encoding="utf-8")
    try:
        yield port
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
