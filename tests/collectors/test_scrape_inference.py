"""Live scraping of an inference server on 127.0.0.1: windows across cycles, a restart, a failure."""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import pytest

from collectors.scrape import ScrapeSettings
from collectors.scrape_inference import InferenceScraper
from collectors.targets import static_targets
from gpusteward import tables
from tests.collectors.local_http import http_server, status, text

FIXTURE = Path(__file__).parents[1] / "data" / "metrics" / "datadog-vllm-metrics.txt"
T0_MS = 1_793_491_200_000
_CUMULATIVE = re.compile(r"^(vllm:\S+?(?:_total|_bucket|_count|_sum)(?:\{[^}]*\})?) (\S+)$")


def bumped(add: float) -> bytes:
    """The fixture with every cumulative sample (counters, buckets, counts, sums) increased by `add`."""
    out = []
    for line in FIXTURE.read_text().splitlines():
        m = _CUMULATIVE.match(line)
        out.append(f"{m.group(1)} {float(m.group(2)) + add}" if m else line)
    return ("\n".join(out) + "\n").encode()


class Clock:
    def __init__(self) -> None:
        self.mono = 100.0
        self.wall_ms = T0_MS

    def advance(self, seconds: int) -> None:
        self.mono += seconds
        self.wall_ms += seconds * 1000


@contextmanager
def server_of(replies: list[bytes | None]) -> Iterator[str]:
    """Answers each GET with the next body (None: HTTP 503); the last one repeats."""
    calls = iter(range(1 << 30))

    def reply(h: BaseHTTPRequestHandler) -> None:
        body = replies[min(next(calls), len(replies) - 1)]
        (status(503) if body is None else text(body))(h)

    with http_server(reply) as address:
        yield address


def test_successive_scrapes_make_windows_and_a_restart_counts_from_zero() -> None:
    clock = Clock()
    # 1: baseline; 2: +4 everywhere; 3: the server restarted (back to the fixture's values).
    with server_of([bumped(0), bumped(4), bumped(0)]) as address:
        targets = static_targets([address], {"cluster": "lab"})
        scraper = InferenceScraper(targets, clock=lambda: clock.mono, wall_ms=lambda: clock.wall_ms)
        first = scraper.collect()
        assert first.problems == []
        assert first.frames["inference_windows"].is_empty()  # a baseline only
        clock.advance(300)
        second = scraper.collect().frames["inference_windows"]
        clock.advance(300)
        third = scraper.collect().frames["inference_windows"]
    assert second.schema == tables.INFERENCE_WINDOWS
    assert second.height == third.height == 1
    w2, w3 = second.row(0, named=True), third.row(0, named=True)
    assert (w2["cluster"], w2["service"], w2["instance"]) == ("lab", "facebook/opt-125m", address)
    assert w2["window_s"] == w3["window_s"] == 300
    assert w2["requests"] == 4.0
    assert w2["e2e_counts"] == [4.0] * len(w2["e2e_le"])
    assert w2["e2e_sum"] == pytest.approx(4.0)
    assert w2["prompt_tokens"] == 4.0
    # After the restart every series counts from 0: its new value, never negative, never doubled.
    assert w3["requests"] == 1.0
    assert w3["e2e_counts"] == [1.0] * len(w3["e2e_le"])
    assert w3["e2e_sum"] == pytest.approx(0.5034303665161133)
    assert w3["prompt_tokens"] == 5.0
    assert w3["e2e_le"][-1] == float("inf")


def test_a_failed_scrape_makes_one_longer_window() -> None:
    clock = Clock()
    settings = ScrapeSettings(backoff_s=1.0, backoff_max_s=1.0)
    with server_of([bumped(0), None, bumped(6)]) as address:
        scraper = InferenceScraper(
            static_targets([address]), settings=settings, clock=lambda: clock.mono, wall_ms=lambda: clock.wall_ms
        )
        scraper.collect()
        clock.advance(300)
        failed = scraper.collect()
        assert failed.frames["inference_windows"].is_empty()
        assert "HTTP 503" in str(failed.problems[0])
        assert scraper.states[f"http://{address}/metrics"].up is False
        clock.advance(300)
        windows = scraper.collect().frames["inference_windows"]
    row = windows.row(0, named=True)
    assert (row["window_s"], row["requests"], row["cluster"]) == (600, 6.0, "default")


def test_an_answer_without_inference_samples_is_a_failed_scrape() -> None:
    with server_of([b"# TYPE other gauge\nother 1\n"]) as address:
        scraper = InferenceScraper(static_targets([address]))
        batch = scraper.collect()
    assert batch.frames["inference_windows"].is_empty()
    assert "no inference-server samples" in str(batch.problems[0])
