"""Measure the exposition parser against prometheus_client on a 1,000-node dcgm-exporter scrape.

Run: `.venv/bin/python -m tests.collectors.measure_parser [nodes]`. Not a test: timings are reported,
never asserted. Cold = a new SeriesCache; warm = the next scrape of the same targets (new values)
with the cache of the first.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from prometheus_client.parser import text_string_to_metric_families

from collectors.exposition import parse_text
from collectors.samples import SeriesCache
from tests.collectors.dcgm_scrape import scrape
from tests.collectors.reference import our_rows, reference_rows
from tests.collectors.synthetic import dcgm_dump


def _median(run: Callable[[], object], rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(nodes: int = 1000) -> None:
    first, second = scrape(nodes, seed=1), scrape(nodes, seed=2)
    n = nodes * 8 * 20
    print(f"scrape: {nodes} nodes, {n} samples, {len(first) / 1e6:.1f} MB")

    same = our_rows(parse_text(first, openmetrics=False), openmetrics=False) == reference_rows(first, openmetrics=False)
    print(f"rows identical to prometheus_client: {same}")

    reference = _median(lambda: sum(len(f.samples) for f in text_string_to_metric_families(first)), 2)
    cold = _median(lambda: parse_text(first, openmetrics=False, cache=SeriesCache()), 5)
    warm_cache = SeriesCache()
    parse_text(first, openmetrics=False, cache=warm_cache)
    warm = _median(lambda: parse_text(second, openmetrics=False, cache=warm_cache), 5)
    for label, seconds in (("prometheus_client", reference), ("ours, cold", cold), ("ours, warm", warm)):
        print(f"{label:>18}: {seconds:6.3f} s  {n / seconds / 1e3:8.0f}k samples/s  {reference / seconds:5.1f}x")

    dump = dcgm_dump(hosts=8, gpus=8, minutes=1440)
    lines = dump.count("\n")
    om = _median(lambda: parse_text(dump, openmetrics=True), 3)
    print(f"OpenMetrics day dump ({lines} lines, 64 GPUs x 8 fields x 1440 min): {lines / om / 1e3:.0f}k lines/s")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 1000)
