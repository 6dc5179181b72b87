"""One bad exporter never crashes `collect --once`: real local servers that lie about gzip, reset the
connection, never answer or send too much; the good targets of the same run keep their GPU-minutes."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from datetime import UTC, date, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest
from click.testing import CliRunner

from collectors.scrape import Scraper, ScrapeSettings
from collectors.targets import static_targets
from service.cli_collect import collect
from simulator.serve import LiveFleet, serving
from tests.collectors.local_http import Reply, gzip_encoded, hang, http_server, text
from tests.configs import config_env
from warehouse import open_warehouse

NOON = datetime(2026, 10, 1, 12, tzinfo=UTC).timestamp()
GOOD_MINUTES = 26  # two simulated nodes of 8 GPUs, east's MIG node (8 instances) and its time-sliced
# notebook node (2 cards, one row each), one minute each


@pytest.fixture
def fleet_targets(tmp_path: Path) -> Iterator[Path]:
    fleet = LiveFleet(2, 3, start=date(2026, 10, 1), days=1, clock=lambda: NOON)
    with serving(fleet, tmp_path / "targets.json"):
        yield tmp_path / "targets.json"


# Says gzip, sends plain text: httpx raises DecodingError while reading the body.
gzip_lie = gzip_encoded(b'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="liar"} 50\n' * 50)


def reset(h: BaseHTTPRequestHandler) -> None:
    """Starts an answer, then resets the connection (RST, not FIN)."""
    h.wfile.write(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\nDCGM_FI")
    h.wfile.flush()
    h.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    h.connection.close()


def endless(h: BaseHTTPRequestHandler) -> None:
    """A chunked answer that never ends (well past any body limit)."""
    h.send_response(200)
    h.send_header("Content-Type", "text/plain; version=0.0.4")
    h.send_header("Transfer-Encoding", "chunked")
    h.end_headers()
    line = b'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="big"} 1\n' * 1000
    for _ in range(100_000):
        h.wfile.write(f"{len(line):x}\r\n".encode() + line + b"\r\n")


def once(db: Path, targets: Path, bad: str, *extra: str) -> tuple[int, str]:
    result = CliRunner(env=config_env(db.parent)).invoke(
        collect, ["--once", "--db", str(db), "--targets", str(targets), "--target", bad, "--timeout", "3", *extra]
    )
    return result.exit_code, result.output


@pytest.mark.parametrize(
    ("reply", "reason"),
    [(gzip_lie, "decoding"), (reset, "connection"), (text(b"\x1f\x8b\x08garbage"), "parse")],
    ids=["gzip-lie", "reset", "garbage"],
)
def test_a_bad_target_is_named_and_the_good_ones_are_stored(
    fleet_targets: Path, tmp_path: Path, reply: Reply, reason: str
) -> None:
    db = tmp_path / "w.duckdb"
    with http_server(reply) as bad:
        code, output = once(db, fleet_targets, bad)
    assert code == 1, output
    assert "Traceback" not in output
    assert "scraped 4/5 targets" in output  # four simulated hosts and the bad one
    assert f"({reason})" in output
    assert f"failed targets: http://{bad}/metrics" in output
    with open_warehouse(db) as wh:
        assert wh.count("gpu_minutes") == GOOD_MINUTES


def test_a_target_that_never_answers_times_out(fleet_targets: Path, tmp_path: Path) -> None:
    db = tmp_path / "w.duckdb"
    release = threading.Event()
    with http_server(hang(release)) as bad:
        code, output = once(db, fleet_targets, bad)
        release.set()
    assert code == 1, output
    assert "(timeout)" in output
    with open_warehouse(db) as wh:
        assert wh.count("gpu_minutes") == GOOD_MINUTES


def test_an_answer_over_the_size_limit_is_a_failure_of_that_target_only() -> None:
    with http_server(endless) as big:
        targets = static_targets([big])
        scraper = Scraper(targets, settings=ScrapeSettings(timeout_s=10, max_bytes=1 << 20))
        problems = scraper.collect(flush=True).problems
    assert scraper.states[f"http://{big}/metrics"].up is False
    assert any("too_large" in str(p) for p in problems)
