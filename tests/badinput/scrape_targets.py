"""Fuzz target for the live scrapers: an exporter (or inference server) answering hostile text.

`live_scrape` runs `Scraper.collect` (or `InferenceScraper.collect`, twice, so windows are built)
against an in-process transport that answers `text`, with limits smaller than the defaults. The
invariants: `collect` never raises; a target that failed says why in a problem; and a failure is
one of the documented reasons, never `error` (the catch-all for an unexpected exception while
reading one target's answer, which keeps the other targets safe but is a bug of its own).
"""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from collectors.scrape import Scraper, ScrapeSettings
from collectors.scrape_inference import InferenceScraper
from collectors.targets import static_targets
from gpusteward.config.limits import LimitsConfig

SCRAPE_MS = int(datetime(2026, 11, 1, tzinfo=UTC).timestamp() * 1000)
LIMITS = LimitsConfig(
    max_line_length=2048, max_series=200, max_labels=12, max_label_value_length=64, max_decompressed_bytes=1 << 16
)


class ScrapeInvariantError(AssertionError):
    """A live scrape broke one of its invariants."""


def live_scrape(text: str, openmetrics: bool, inference: bool) -> None:
    body = text.encode("utf-8", "surrogatepass")
    kind = "application/openmetrics-text; version=1.0.0" if openmetrics else "text/plain; version=0.0.4"
    transport = httpx.MockTransport(lambda _: httpx.Response(200, content=body, headers={"Content-Type": kind}))
    targets = static_targets(["exporter:9400"])
    settings = ScrapeSettings(timeout_s=5, backoff_s=0, backoff_max_s=0, limits=LIMITS)
    scraper: Scraper
    if inference:
        scraper = InferenceScraper(targets, settings=settings, transport=transport, wall_ms=lambda: SCRAPE_MS)
    else:
        scraper = Scraper(targets, settings=settings, transport=transport, wall_ms=lambda: SCRAPE_MS)
    for _ in range(2 if inference else 1):
        batch = scraper.collect(flush=True)  # raising is the finding
        state = scraper.states[targets[0].url]
        said = "\n".join(str(p) for p in batch.problems)
        if state.up is False and "scrape failed" not in said:
            raise ScrapeInvariantError(f"a failed target without a problem saying so: {said!r}")
        if state.last_error is not None and state.last_error.startswith("error:"):
            raise ScrapeInvariantError(f"an unexpected exception reading the answer: {state.last_error}")
