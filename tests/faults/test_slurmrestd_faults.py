"""slurmrestd answering 5xx, timing out, refusing connections or cutting bodies short (real HTTP on 127.0.0.1).

Each fault is a TransientError naming the daemon, the request and what happened (the service's job
runner retries those with backoff); no half-read batch comes back; and once the daemon answers
again the same client reads exactly what a client that never saw the fault reads.
"""

from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest
from polars.testing import assert_frame_equal

from collectors.slurm import SlurmClient, SlurmRest
from gpusteward.errors import InputError, TransientError
from tests.collectors.local_http import http_server, status

DATA = Path(__file__).resolve().parents[1] / "data" / "scheduler" / "slurm" / "22.05-local"
START, END = datetime(2026, 1, 1), datetime(2026, 1, 2)
CLUSTER = "gpuobs"


def _load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((DATA / name).read_text(encoding="utf-8"))
    return data


@dataclass
class FakeSlurmrestd:
    """The 22.05 answers from tests/data; `faults` maps a path to the modes its next requests get."""

    jobs: dict[str, Any] = field(default_factory=lambda: _load("rest-slurmdb-jobs.json"))
    faults: dict[str, list[str]] = field(default_factory=dict)
    release: threading.Event = field(default_factory=threading.Event)
    seen: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def answer(self, path: str) -> Any:
        if path.endswith("/jobs"):
            return self.jobs
        if "/job/" in path:
            job_id = int(path.rsplit("/", 1)[1])
            return {
                **self.jobs,
                "jobs": [j for j in self.jobs["jobs"] if isinstance(j, dict) and j["job_id"] == job_id],
            }
        if path.endswith("/qos"):
            return _load("rest-slurmdb-qos.json")
        if path.endswith("/associations"):
            return _load("rest-slurmdb-associations.json")
        if path.endswith("/partitions"):
            return {"partitions": [{"name": "train", "tres": "cpu=64,gres/gpu=16", "priority_tier": 10}]}
        return None

    def __call__(self, h: BaseHTTPRequestHandler) -> None:
        path = urlparse(h.path).path
        with self.lock:
            self.seen.append(path)
            queue = self.faults.get(path, [])
            mode = queue.pop(0) if queue else "ok"
        if mode == "hang":
            self.release.wait(10)
            return
        if mode in ("500", "502", "503"):
            status(int(mode), b'{"errors": [{"error": "Unable to contact slurmdbd", "error_number": 7000}]}')(h)
            return
        data = self.answer(path)
        if data is None:
            status(404, b'{"errors": [{"error": "Unable to resolve path"}]}')(h)
            return
        body = json.dumps(data).encode()
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body) + (500 if mode == "truncated" else 0)))
        h.end_headers()
        h.wfile.write(body[: len(body) // 2] if mode == "truncated" else body)
        if mode == "truncated":
            h.close_connection = True


@pytest.fixture
def fake() -> Iterator[tuple[FakeSlurmrestd, str]]:
    server = FakeSlurmrestd()
    with http_server(server) as address:
        try:
            yield server, f"http://{address}"
        finally:
            server.release.set()


def client_of(url: str) -> SlurmClient:
    return SlurmClient(CLUSTER, rest=SlurmRest(base_url=url, timeout_s=0.5))


JOBS = "/slurmdb/v0.0.38/jobs"
HISTORY = "/slurmdb/v0.0.38/job/5"  # job 5 was preempted: its history is asked for by id


@pytest.mark.parametrize(
    ("path", "fault", "said"),
    [
        (JOBS, "503", r"HTTP 503: Unable to contact slurmdbd \(7000\)"),
        (JOBS, "500", r"HTTP 500"),
        (JOBS, "hang", r"ReadTimeout"),
        (JOBS, "truncated", r"RemoteProtocolError"),
        (HISTORY, "502", r"HTTP 502"),
        (HISTORY, "hang", r"ReadTimeout"),
    ],
)
def test_a_fault_is_transient_names_the_request_and_the_next_read_is_whole(
    fake: tuple[FakeSlurmrestd, str], path: str, fault: str, said: str
) -> None:
    server, url = fake
    clean = client_of(url).jobs(START, END)
    assert HISTORY in server.seen  # the history request is really made
    server.faults[path] = [fault]
    client = client_of(url)
    with pytest.raises(TransientError, match=rf"^slurmrestd {url} GET {path}: .*{said}"):
        client.jobs(START, END)
    again = client.jobs(START, END)  # the daemon is back: the same client reads everything
    assert set(again.frames) == set(clean.frames)
    for table, frame in clean.frames.items():
        assert_frame_equal(again.frames[table], frame)
    assert [str(p) for p in again.problems] == [str(p) for p in clean.problems]


def test_a_refused_connection_is_transient() -> None:
    with socket.socket() as sock:  # a port that nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(TransientError, match=rf"^slurmrestd http://127.0.0.1:{port} GET {JOBS}: ConnectError"):
        client_of(f"http://127.0.0.1:{port}").jobs(START, END)


@pytest.mark.parametrize("path", ["/slurmdb/v0.0.38/qos", "/slurmdb/v0.0.38/associations", "/slurm/v0.0.38/partitions"])
def test_quotas_fail_whole_when_one_request_fails(fake: tuple[FakeSlurmrestd, str], path: str) -> None:
    server, url = fake
    clean = client_of(url).quotas(START)
    assert clean.frames["quota_snapshots"].height > 0
    server.faults[path] = ["503"]
    client = client_of(url)
    with pytest.raises(TransientError, match=rf"GET {path}: HTTP 503"):
        client.quotas(START)  # no snapshot missing one kind of quota comes back
    assert_frame_equal(client.quotas(START).frames["quota_snapshots"], clean.frames["quota_snapshots"])


def test_an_unreadable_record_next_to_a_requeued_job_is_reported_once(fake: tuple[FakeSlurmrestd, str]) -> None:
    # Used to raise AttributeError ('str' object has no attribute 'get') while asking for job 5's history.
    server, url = fake
    clean = client_of(url).jobs(START, END)
    server.jobs = {**server.jobs, "jobs": [*server.jobs["jobs"], "not a job", {"job_id": {"number": []}}]}
    batch = client_of(url).jobs(START, END)
    assert_frame_equal(batch.frames["jobs"], clean.frames["jobs"])
    skipped = [str(p) for p in batch.problems if "skipped" in str(p)]
    assert len(skipped) == 2, batch.problems
    assert "job record 9" in skipped[0]
    assert "job record 10" in skipped[1]


def test_a_history_answer_without_a_jobs_list_is_an_input_error(fake: tuple[FakeSlurmrestd, str]) -> None:
    server, url = fake
    real = server.answer

    def broken(path: str) -> Any:
        return {"jobs": {"5": {}}} if "/job/" in path else real(path)

    server.answer = broken  # type: ignore[method-assign]
    with pytest.raises(InputError, match=rf"^slurmrestd {url} GET {HISTORY}: no 'jobs' list"):
        client_of(url).jobs(START, END)
