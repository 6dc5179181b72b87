"""Live dcgm-exporter scraping: concurrent fetches, per-target timeout, backoff, up/down state.

`Scraper.scrape()` fetches every target that is not backing off, parses each answer with one shared
`SeriesCache` (repeated scrapes take the parser's fast path) and keeps the samples, stamped with
the scrape time, until their minute is over. `Scraper.collect()` scrapes once and returns the
GPU-minutes of the minutes that are complete (all of them with `flush=True`) in a `CollectedBatch`.

Never a zero for a silent GPU: a target that fails (timeout, refused connection or reset, HTTP
error, a Content-Encoding that does not decode, a body too large or that does not parse, or any
unexpected error while reading its answer) contributes no samples, so its minutes are missing rows, and the
failure is a `Problem` naming the target and the reason. A failed target backs off exponentially
(`backoff_s` doubling up to `backoff_max_s`) and is reported as down until a scrape succeeds.

Every answer is read within `ScrapeSettings.limits` (the config's `[limits]`, as an import is):
its decoded size, line length, label sets and new series, and the time window around the scrape
that sample timestamps must fall in (samples outside it are refused with a problem; a target all
of whose samples are outside it fails).
"""

from __future__ import annotations

import asyncio
import time
from array import array
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime

import httpx
import numpy as np
import numpy.typing as npt
import polars as pl
from prometheus_client import CollectorRegistry

from collectors.batch import CollectedBatch, Problem
from collectors.dcgm import GpuIndex, gpu_minutes, is_dcgm
from collectors.exposition import ExpositionParser, split_lines
from collectors.numbers import NO_TIMESTAMP
from collectors.plausible import TimeWindow
from collectors.samples import Samples, SeriesCache
from collectors.scrape_metrics import ScrapeMetrics
from collectors.targets import Target
from gpusteward import tables
from gpusteward.config.limits import DEFAULT_LIMITS, LimitsConfig
from gpusteward.errors import InputError

MINUTE_MS = 60_000
ACCEPT = "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1"


@dataclass(frozen=True)
class ScrapeSettings:
    """How the live collector scrapes; every field has a safe default."""

    timeout_s: float = 10.0  # per target: connect, answer and body together
    concurrency: int = 64  # targets fetched at the same time
    backoff_s: float = 30.0  # wait after the first failure; doubles per further failure
    backoff_max_s: float = 600.0
    max_bytes: int = 64 << 20  # a larger answer is a failure (too_large); so is one over limits.max_decompressed_bytes
    default_cluster: str = "default"  # for targets without a `cluster` label
    limits: LimitsConfig = DEFAULT_LIMITS  # the config's [limits]: lines, labels, series, body size, sample times

    @property
    def body_limit(self) -> int:
        """The most bytes an answer may hold once decoded: `max_bytes` or the configured size limit."""
        return min(self.max_bytes, self.limits.max_decompressed_bytes)


@dataclass
class TargetState:
    """Up/down state of one target."""

    up: bool | None = None  # None until the first scrape
    failures: int = 0  # consecutive
    retry_at: float = 0.0  # monotonic seconds; skipped before this
    last_error: str | None = None
    last_samples: int = 0


class ScrapeError(Exception):
    """One target's scrape failed; `reason` is a label of gpusteward_scrape_failures_total."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


@dataclass
class _Pending:
    """Samples waiting for their minute to end, for targets sharing one default cluster."""

    samples: Samples
    problems: list[Problem] = field(default_factory=list)


class Scraper:
    """Scrapes a fixed list of targets; keep one instance across cycles (cache, state, backoff)."""

    def __init__(
        self,
        targets: Sequence[Target],
        *,
        settings: ScrapeSettings | None = None,
        registry: CollectorRegistry | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_ms: Callable[[], int] = lambda: time.time_ns() // 1_000_000,
    ) -> None:
        self.targets = list(targets)
        self.settings = settings or ScrapeSettings()
        self.metrics = ScrapeMetrics(registry if registry is not None else CollectorRegistry())
        self.states: dict[str, TargetState] = {t.url: TargetState() for t in self.targets}
        self.cache = SeriesCache()
        self._transport = transport
        self._clock = clock
        self._wall_ms = wall_ms
        self._pending: dict[str, _Pending] = {}
        self._wanted = np.zeros(0, dtype=bool)  # series id -> a DCGM field that GPU_MINUTES keeps
        self._indexes: dict[str, GpuIndex] = {}  # cluster -> its series' GPU codes, kept across cycles
        # Each cycle has its own client (its connections belong to that cycle's event loop), but the TLS
        # context is built once: loading the CA bundle costs about 60 ms, more than a cycle of plain-HTTP
        # exporters on loopback.
        self._tls = httpx.create_ssl_context()

    # -- one cycle ---------------------------------------------------------------------------

    def collect(self, *, flush: bool = False) -> CollectedBatch:
        """Scrape every due target once; return the GPU-minutes of complete minutes (all with `flush`)."""
        problems = asyncio.run(self.scrape())
        now_ms = self._wall_ms()
        batch = self.take(None if flush else now_ms // MINUTE_MS * MINUTE_MS)
        batch.problems[:0] = problems
        return batch

    async def scrape(self) -> list[Problem]:
        """Fetch and parse every due target; failures come back as problems (and in `states`)."""
        started = self._clock()
        s = self.settings
        limits = httpx.Limits(max_connections=s.concurrency, max_keepalive_connections=s.concurrency)
        gate = asyncio.Semaphore(s.concurrency)
        problems: list[Problem] = []
        async with httpx.AsyncClient(
            transport=self._transport, limits=limits, timeout=s.timeout_s, headers={"Accept": ACCEPT}, verify=self._tls
        ) as client:

            async def one(t: Target) -> None:
                async with gate:
                    problem = await self._scrape_target(client, t)
                if problem is not None:
                    problems.append(problem)

            await asyncio.gather(*(one(t) for t in self.targets))
        self.metrics.cycle_seconds.set(self._clock() - started)
        problems.sort(key=lambda p: p.source)
        return problems

    async def _scrape_target(self, client: httpx.AsyncClient, t: Target) -> Problem | None:
        state = self.states[t.url]
        now = self._clock()
        if state.failures and now < state.retry_at:
            self.metrics.up.labels(t.url).set(0)
            return Problem(
                t.url,
                f"down, not scraped: backing off {state.retry_at - now:.0f} s more after "
                f"{state.failures} failure(s); last: {state.last_error}",
            )
        started = self._clock()
        try:
            body, openmetrics = await asyncio.wait_for(self._fetch(client, t), self.settings.timeout_s)
            scrape_ms = self._wall_ms()
            samples = self._parse(t, body, openmetrics=openmetrics)
            samples, refused = self._timely(t, samples, scrape_ms, openmetrics=openmetrics)
        except (TimeoutError, httpx.TimeoutException):
            error = ScrapeError("timeout", f"no complete answer within {self.settings.timeout_s:g} s (timeout)")
            return self._failed(t, state, error, started)
        except httpx.TransportError as exc:
            return self._failed(t, state, ScrapeError("connection", f"connection failed: {exc!r}"), started)
        except httpx.DecodingError as exc:  # e.g. Content-Encoding: gzip over a plain body
            error = ScrapeError("decoding", f"the answer's Content-Encoding does not decode: {exc}")
            return self._failed(t, state, error, started)
        except ScrapeError as exc:
            return self._failed(t, state, exc, started)
        except Exception as exc:  # anything else one target sends stays with that target
            error = ScrapeError("error", f"unexpected {type(exc).__name__}: {exc}")
            return self._failed(t, state, error, started)
        self.metrics.duration.observe(self._clock() - started)
        self.metrics.samples.inc(len(samples))
        self.metrics.up.labels(t.url).set(1)
        state.up, state.failures, state.last_error, state.last_samples = True, 0, None, len(samples)
        self._keep(t, samples, scrape_ms)
        return refused

    async def _fetch(self, client: httpx.AsyncClient, t: Target) -> tuple[str, bool]:
        limit = self.settings.body_limit
        which = "" if limit == self.settings.max_bytes else " (limits.max_decompressed_bytes)"
        async with client.stream("GET", t.url) as response:
            if response.status_code != httpx.codes.OK:
                raise ScrapeError("http_status", f"HTTP {response.status_code} {response.reason_phrase}")
            declared = response.headers.get("content-length")
            if declared is not None and declared.isdigit() and int(declared) > limit:
                raise ScrapeError("too_large", f"answer of {declared} bytes is over the {limit}-byte limit{which}")
            chunks: list[bytes] = []
            size = 0
            async for chunk in response.aiter_bytes():  # decoded: the limit bounds what a gzip answer expands to
                size += len(chunk)
                if size > limit:
                    raise ScrapeError("too_large", f"answer is over the {limit}-byte limit{which}")
                chunks.append(chunk)
            openmetrics = "openmetrics" in response.headers.get("content-type", "")
        try:
            return b"".join(chunks).decode("utf-8"), openmetrics
        except UnicodeDecodeError as exc:
            raise ScrapeError("parse", f"answer is not UTF-8 (byte {exc.start})") from exc

    def _parse(self, t: Target, body: str, *, openmetrics: bool) -> Samples:
        parser = ExpositionParser(t.url, openmetrics=openmetrics, cache=self.cache, limits=self.settings.limits)
        try:
            for lines in split_lines(body):
                parser.feed(lines)
            samples = parser.close()
        except InputError as exc:
            raise ScrapeError("parse", f"not a valid exposition: {exc.problem} (line {exc.line})") from exc
        self._check_kind(samples)
        return samples

    def _check_kind(self, samples: Samples) -> None:
        """Refuse an answer that is not what this scraper reads (here: dcgm-exporter's)."""
        if not any(self.cache.series[s].name.startswith(("DCGM_", "dcgm_")) for s in set(samples.series_id)):
            raise ScrapeError("parse", f"no DCGM samples in the answer ({len(samples)} other samples)")

    def _used(self, samples: Samples) -> npt.NDArray[np.bool_]:
        """The samples this scraper keeps: those of the DCGM fields GPU_MINUTES uses."""
        table = self.cache.series
        if len(self._wanted) < len(table):
            new = [is_dcgm(table[i]) for i in range(len(self._wanted), len(table))]
            self._wanted = np.concatenate([self._wanted, np.array(new, dtype=bool)])
        used: npt.NDArray[np.bool_] = self._wanted[samples.arrays()[0]]
        return used

    def _timely(
        self, t: Target, samples: Samples, scrape_ms: int, *, openmetrics: bool
    ) -> tuple[Samples, Problem | None]:
        """The samples whose time lies in the window of `limits` around the scrape, as an import judges
        a file's; the used ones outside it are refused with a problem, and a target all of whose used
        samples are outside it fails (`parse`). Samples without a timestamp take the scrape's time."""
        now = datetime.fromtimestamp(scrape_ms / 1000, UTC)
        window = TimeWindow.around(now, self.settings.limits, openmetrics=openmetrics)
        ts = samples.arrays()[2]
        used = self._used(samples)
        outside = used & window.outside(ts)
        refused = int(np.count_nonzero(outside))
        if not refused:
            return samples, None
        message = window.explain(ts[outside])
        if refused == int(np.count_nonzero(used)):
            raise ScrapeError("parse", f"every sample is {message}")
        problem = Problem(t.url, f"{refused} samples were refused: {message}")
        return _subset(samples, ~outside), problem

    def _failed(self, t: Target, state: TargetState, error: ScrapeError, started: float) -> Problem:
        s = self.settings
        self.metrics.duration.observe(self._clock() - started)
        self.metrics.failures.labels(error.reason).inc()
        self.metrics.up.labels(t.url).set(0)
        state.up = False
        state.failures += 1
        state.last_error = f"{error.reason}: {error}"
        state.retry_at = self._clock() + min(s.backoff_max_s, s.backoff_s * 2 ** (state.failures - 1))
        return Problem(t.url, f"scrape failed ({error.reason}): {error}; its GPUs have no rows for this scrape")

    # -- samples -> GPU-minutes --------------------------------------------------------------

    def _keep(self, t: Target, samples: Samples, scrape_ms: int) -> None:
        """Keep the samples of the fields GPU_MINUTES uses (a third of dcgm-exporter's defaults)."""
        samples = _subset(samples, self._used(samples))
        ts = samples.arrays()[2]
        ts[ts == NO_TIMESTAMP] = scrape_ms  # exporters print no timestamps: the scrape time
        cluster = t.cluster or self.settings.default_cluster
        pending = self._pending.get(cluster)
        if pending is None:
            self._pending[cluster] = _Pending(samples)
        else:
            pending.samples.extend(samples)

    def take(self, before_ms: int | None) -> CollectedBatch:
        """GPU-minutes from the kept samples older than `before_ms` (all when None); the rest stay."""
        batch = CollectedBatch("scrape")
        frames: list[pl.DataFrame] = []
        for cluster, pending in list(self._pending.items()):
            ts = pending.samples.arrays()[2]
            done = np.ones(len(ts), dtype=bool) if before_ms is None else ts < before_ms
            if not done.any():
                continue
            ready = _subset(pending.samples, done)
            rest = _subset(pending.samples, ~done)
            if len(rest):
                pending.samples = rest
            else:
                del self._pending[cluster]
            index = self._indexes.setdefault(cluster, GpuIndex(cluster))
            frame, problems = gpu_minutes(ready, default_cluster=cluster, source=f"scrape:{cluster}", index=index)
            frames.append(frame)
            batch.problems.extend(problems)
        batch.add("gpu_minutes", pl.concat(frames) if frames else tables.empty(tables.GPU_MINUTES))
        return batch


def _subset(samples: Samples, mask: npt.NDArray[np.bool_]) -> Samples:
    sid, value, ts = samples.arrays()
    out = Samples(samples.series)
    out.series_id = array("q", sid[mask].tobytes())
    out.value = array("d", value[mask].tobytes())
    out.timestamp_ms = array("q", ts[mask].tobytes())
    return out
