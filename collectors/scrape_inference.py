"""Live scraping of inference servers' /metrics into INFERENCE_WINDOWS.

`InferenceScraper` is the DCGM `Scraper` (same HTTP client, per-target timeout, size limit,
exponential backoff, up/down state and self-metrics) with a different end: each successful scrape
of a target is one point of its series, and `collect()` (scrape once, then `take()`) turns the
scrapes since the last call into windows with the same builder as a file import
(`collectors/inference.py`). Each target keeps its
own `WindowState` across cycles, so a window ends at each scrape and spans back to the target's
previous successful scrape: a failed or skipped scrape makes one longer window, never a gap in the
counts, and a server that restarted (a counter went down) counts from 0, never negative.

Samples are read through a `MappingIndex` (the built-ins, plus the config's with
`mapping_index(config)`); an answer with no sample any mapping knows is a failed scrape (`parse`).
The replica is the sample's `instance` (or `pod`) label, else the target's `instance` (its
address); the cluster is the sample's `cluster` label, else the target's, else the settings'.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import httpx
import numpy as np
import numpy.typing as npt
import polars as pl
from prometheus_client import CollectorRegistry

from collectors.batch import CollectedBatch
from collectors.inference import WindowState, inference_windows
from collectors.inference_mappings import DEFAULT_INDEX, MappingIndex
from collectors.numbers import NO_TIMESTAMP
from collectors.samples import Samples
from collectors.scrape import ScrapeError, Scraper, ScrapeSettings
from collectors.targets import Target
from gpusteward import tables


@dataclass
class _Scrapes:
    target: Target
    samples: list[Samples] = field(default_factory=list)


class InferenceScraper(Scraper):
    """Scrapes inference servers; keep one instance across cycles (window state, cache, backoff)."""

    def __init__(
        self,
        targets: Sequence[Target],
        *,
        mappings: MappingIndex = DEFAULT_INDEX,
        settings: ScrapeSettings | None = None,
        registry: CollectorRegistry | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        super().__init__(
            targets, settings=settings, registry=registry, transport=transport, clock=clock, wall_ms=wall_ms
        )
        self.mappings = mappings
        self.window_states: dict[str, WindowState] = {t.url: WindowState() for t in self.targets}
        self._scrapes: dict[str, _Scrapes] = {}
        self._known = np.zeros(0, dtype=bool)  # series id -> a sample some mapping knows

    def _check_kind(self, samples: Samples) -> None:
        if not self._used(samples).any():
            raise ScrapeError("parse", f"no inference-server samples in the answer ({len(samples)} other samples)")

    def _used(self, samples: Samples) -> npt.NDArray[np.bool_]:
        """The samples some mapping knows."""
        table = self.cache.series
        if len(self._known) < len(table):
            new = [self.mappings.knows(table[i].name) for i in range(len(self._known), len(table))]
            self._known = np.concatenate([self._known, np.array(new, dtype=bool)])
        used: npt.NDArray[np.bool_] = self._known[samples.arrays()[0]]
        return used

    def _keep(self, t: Target, samples: Samples, scrape_ms: int) -> None:
        ts = samples.arrays()[2]
        ts[ts == NO_TIMESTAMP] = scrape_ms  # servers print no timestamps: the scrape time
        self._scrapes.setdefault(t.url, _Scrapes(t)).samples.append(samples)

    def take(self, before_ms: int | None = None) -> CollectedBatch:  # noqa: ARG002 - see below
        """Windows of every scrape kept so far, target by target and in scrape order.

        A window is complete at its scrape, so nothing waits for a minute to end: `before_ms`
        is accepted for the `Scraper` interface and ignored.
        """
        batch = CollectedBatch("scrape")
        frames: list[pl.DataFrame] = []
        for url, kept in sorted(self._scrapes.items()):
            t = kept.target
            cluster = t.cluster or self.settings.default_cluster
            instance = t.labels.get("instance") or url
            for samples in kept.samples:
                frame, problems = inference_windows(
                    samples,
                    default_cluster=cluster,
                    source=url,
                    state=self.window_states.setdefault(url, WindowState()),
                    default_instance=instance,
                    mappings=self.mappings,
                )
                frames.append(frame)
                batch.problems.extend(problems)
        self._scrapes.clear()
        batch.add("inference_windows", pl.concat(frames) if frames else tables.empty(tables.INFERENCE_WINDOWS))
        return batch
