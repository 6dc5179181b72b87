"""Parse a 1,000-node dcgm-exporter scrape: ours (cold and warm) against prometheus_client.parser.

Cold = a new SeriesCache; warm = the next scrape of the same targets (new values) with the cache of
the first. The three parsers run in alternating rounds (bench.harness.interleaved); the rows of
ours and prometheus_client's are asserted identical before timing.

Each contender ends with `gc.collect()` (timed, its own garbage): prometheus_client allocates
objects the cyclic collector tracks, so its time depends on what else is alive in the process; it
ran about twice as slow with the warm cache and the row lists of the identity check still young.
A clean heap per round is the fair comparison.
"""

from __future__ import annotations

import gc
from collections.abc import Callable
from typing import Any

from prometheus_client.parser import text_string_to_metric_families as families

from bench.harness import interleaved
from collectors.exposition import parse_text
from collectors.samples import SeriesCache
from tests.collectors.dcgm_scrape import scrape
from tests.collectors.reference import our_rows, reference_rows


def run(quick: bool) -> dict[str, Any]:
    nodes = 100 if quick else 1000
    first, second = scrape(nodes, seed=1), scrape(nodes, seed=2)
    for text in (first, second):
        ours = our_rows(parse_text(text, openmetrics=False), openmetrics=False)
        if ours != reference_rows(text, openmetrics=False):
            raise AssertionError("our rows differ from prometheus_client's")
    warm_cache = SeriesCache()
    parse_text(first, openmetrics=False, cache=warm_cache)
    timings = interleaved(
        {
            "prometheus_client": _collected(lambda: sum(len(f.samples) for f in families(second))),
            "ours_cold": _collected(lambda: parse_text(second, openmetrics=False, cache=SeriesCache())),
            "ours_warm": _collected(lambda: parse_text(second, openmetrics=False, cache=warm_cache)),
        },
        runs=2 if quick else 3,
    )
    ref = timings["prometheus_client"].median_s
    return {
        "nodes": nodes,
        "samples": nodes * 8 * 20,
        "bytes": len(second),
        "rows_identical": True,
        "timings": {name: t.as_dict() for name, t in timings.items()},
        "ratio_cold": round(ref / timings["ours_cold"].median_s, 1),
        "ratio_warm": round(ref / timings["ours_warm"].median_s, 1),
        "goal": {"cold": 20, "warm": 40},
    }


def _collected(fn: Callable[[], object]) -> Callable[[], object]:
    """Each contender pays for collecting its own garbage, so the next one starts on a clean heap."""

    def run_and_collect() -> object:
        out = fn()
        gc.collect()
        return out

    return run_and_collect
