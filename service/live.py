"""Live scrape sources of the service: the `[[service.scrape]]` entries as `LiveSource`s.

One `ScrapeSource` keeps one scraper (DCGM or inference) for the life of the service, so its
series cache, per-target backoff and window state carry over from cycle to cycle. The target list
is re-read from its file_sd file when the file changes (a target that left is dropped, a new one
starts fresh); a file that cannot be read keeps the last good list and says so in the batch.

Scrape times come from the service's clock, so a test that runs simulated hours against
`serve-fleet` (which also takes a clock) sees the same minutes on both sides. A DCGM minute is
stored once it has ended; the samples of the current minute wait for the next cycle.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from prometheus_client import CollectorRegistry

from collectors.batch import CollectedBatch, Problem
from collectors.inference_mappings import DEFAULT_INDEX, MappingIndex, mapping_index
from collectors.scrape import Scraper, ScrapeSettings, TargetState
from collectors.scrape_inference import InferenceScraper
from collectors.targets import Target, load_file_sd, static_targets
from gpusteward.config import Config
from gpusteward.config.limits import DEFAULT_LIMITS, LimitsConfig
from gpusteward.config.service import ScrapeSourceConfig
from gpusteward.errors import InputError


@dataclass
class ScrapeSource:
    """A `LiveSource` that scrapes one configured list of targets each time it runs."""

    spec: ScrapeSourceConfig
    base_dir: Path
    mappings: MappingIndex = DEFAULT_INDEX
    limits: LimitsConfig = DEFAULT_LIMITS  # the config's [limits]
    registry: CollectorRegistry = field(default_factory=CollectorRegistry)  # this source's scrape metrics
    _scraper: Scraper | None = None
    _now_ms: int = 0
    _cycle_started: float = 0.0  # time.monotonic() when this cycle began
    _sd_signature: tuple[float, int] | None = None
    _targets: list[Target] = field(default_factory=list)

    @property
    def name(self) -> str:
        return self.spec.name

    def collect(self, now: datetime) -> CollectedBatch:
        self._now_ms = int(now.timestamp() * 1000)
        self._cycle_started = time.monotonic()
        problems = self._refresh_targets()
        scraper = self._scraper
        if scraper is None or not scraper.targets:
            batch = CollectedBatch(f"scrape:{self.name}")
            batch.problems.extend(problems or [Problem(self.name, "no targets to scrape")])
            return batch
        batch = scraper.collect()
        batch.source = f"scrape:{self.name}"
        batch.problems[:0] = problems
        return batch

    def _refresh_targets(self) -> list[Problem]:
        problems: list[Problem] = []
        targets = static_targets(self.spec.targets)
        if self.spec.file_sd:
            path = self.base_dir / self.spec.file_sd
            try:
                stat = path.stat()
                signature = (stat.st_mtime, stat.st_size)
                if signature != self._sd_signature:
                    self._targets = load_file_sd(path)
                    self._sd_signature = signature
            except (OSError, InputError) as exc:
                kept = f"; kept the last {len(self._targets)} targets" if self._targets else ""
                problems.append(Problem(str(path), f"target list not read: {exc}{kept}"))
            targets += self._targets
        if self._scraper is None:
            self._scraper = self._new_scraper(targets)
        elif [t.url for t in targets] != [t.url for t in self._scraper.targets]:
            retarget(self._scraper, targets)
        return problems

    def _new_scraper(self, targets: Sequence[Target]) -> Scraper:
        settings = ScrapeSettings(
            timeout_s=self.spec.timeout.total_seconds(), default_cluster=self.spec.cluster, limits=self.limits
        )
        wall_ms: Callable[[], int] = lambda: self._now_ms  # noqa: E731 - the service's clock, read per scrape
        # Backoff is counted on the service's clock (so simulated hours back off as real ones would),
        # durations on the real one: the cycle's start on the service clock plus real time since.
        clock: Callable[[], float] = lambda: self._now_ms / 1000 + (time.monotonic() - self._cycle_started)  # noqa: E731
        if self.spec.kind == "inference":
            return InferenceScraper(
                targets,
                mappings=self.mappings,
                settings=settings,
                registry=self.registry,
                clock=clock,
                wall_ms=wall_ms,
            )
        return Scraper(targets, settings=settings, registry=self.registry, clock=clock, wall_ms=wall_ms)


def retarget(scraper: Scraper, targets: Sequence[Target]) -> None:
    """Scrape `targets` from now on; targets kept keep their up/down state and backoff."""
    scraper.targets = list(targets)
    kept = {t.url for t in targets}
    for url in [u for u in scraper.states if u not in kept]:
        del scraper.states[url]
        with contextlib.suppress(KeyError):  # never scraped: no series to remove
            scraper.metrics.up.remove(url)  # a target that left is no longer "down"
    for t in targets:
        scraper.states.setdefault(t.url, TargetState())


def scrape_sources(config: Config) -> list[ScrapeSource]:
    """The configured scrape sources, each with its own scraper and metrics registry, reading within `[limits]`."""
    mappings = mapping_index(config)
    return [ScrapeSource(s, Path(config.base_dir), mappings, config.limits) for s in config.service.scrape]
