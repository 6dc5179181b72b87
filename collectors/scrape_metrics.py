"""The live collector's own metrics, registered on a registry the caller owns (never the global one)."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

# Failure reasons, the `reason` label of gpusteward_scrape_failures_total.
REASONS = ("timeout", "connection", "decoding", "http_status", "too_large", "parse", "error")


class ScrapeMetrics:
    """Scrape duration, failures by reason, samples read, and each target's up/down state."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.duration = Histogram(
            "gpusteward_scrape_duration_seconds",
            "Time to fetch and parse one target's exposition, failed scrapes included.",
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0),
            registry=registry,
        )
        self.failures = Counter(
            "gpusteward_scrape_failures",
            f"Scrapes that stored nothing, by reason ({', '.join(REASONS)}).",
            ["reason"],
            registry=registry,
        )
        self.samples = Counter(
            "gpusteward_scrape_samples",
            "Samples parsed from successful scrapes.",
            registry=registry,
        )
        self.up = Gauge(
            "gpusteward_scrape_target_up",
            "1 when the target's last scrape succeeded, 0 when it failed or is backing off.",
            ["target"],
            registry=registry,
        )
        self.cycle_seconds = Gauge(
            "gpusteward_scrape_cycle_seconds",
            "Wall time of the last collection cycle over all targets.",
            registry=registry,
        )
