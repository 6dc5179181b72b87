"""Parse a 1,000-node dcgm-exporter scrape: ours (cold and warm) against prometheus_client.parser;
and an OpenMetrics day dump (each series' minutes together, as the simulator and promtool write
them): our per-line path against the columnar path for runs of one series (`dump_*`).

Cold = a new SeriesCache; warm = the next scrape of the same targets (new values) with the cache of
the scrapes before it. The rows of ours and prometheus_client's are asserted identical first.

Each contender runs in a worker process of its own, started fresh for this run, so that its time
does not depend on what the other contenders left alive: CPython's cyclic collector walks every
tracked object in the process, and prometheus_client (which allocates many tracked objects) ran
about twice as slow beside our warm cache and the row lists of the identity check. In each worker
the setup (the scrape text, the warm cache) is collected and frozen (`gc.freeze()`), as a long-
running collector's old objects are, and each timed call ends with `gc.collect()` of its own
garbage. The workers are driven in alternating rounds, so machine noise hits them alike.

The dump is fed in batches of about 4 MiB of text, as `collectors.bounded.lines` reads a file; both
dump contenders parse it cold (a new cache, as an import of a day file does) and their samples are
asserted identical first.
"""

from __future__ import annotations

import gc
import multiprocessing
import statistics
import time
from collections.abc import Callable
from multiprocessing.connection import Connection
from typing import Any

from bench.harness import Timing

CONTENDERS = ("prometheus_client", "ours_cold", "ours_warm", "dump_per_line", "dump_batch")
DUMP_BATCH_CHARS = 1 << 22  # collectors.bounded.CHUNK


def _dump_size(quick: bool) -> tuple[int, int, int]:
    """Hosts, GPUs per host, minutes: a day of 64 GPUs (the demo fleet's), or 8 GPUs for 4 hours."""
    return (2, 4, 240) if quick else (8, 8, 1440)


def run(quick: bool) -> dict[str, Any]:
    nodes = 100 if quick else 1000
    runs = 2 if quick else 3
    _check_rows(nodes)
    dump_lines = _check_dump(quick)
    ctx = multiprocessing.get_context("spawn")
    workers: dict[str, tuple[Connection, Any]] = {}
    try:
        for name in CONTENDERS:
            ours, theirs = ctx.Pipe()
            proc = ctx.Process(target=_worker, args=(name, nodes, quick, theirs), daemon=True)
            proc.start()
            workers[name] = (ours, proc)
        for conn, _ in workers.values():
            conn.recv()  # ready
        samples: dict[str, list[float]] = {name: [] for name in CONTENDERS}
        for _ in range(runs):
            for name, (conn, _) in workers.items():
                conn.send("run")
                samples[name].append(conn.recv())
    finally:
        for conn, proc in workers.values():
            conn.send("stop")
            proc.join(30)
    timings = {n: Timing(statistics.median(s), min(s), max(s), runs) for n, s in samples.items()}
    ref = timings["prometheus_client"].median_s
    from tests.collectors.dcgm_scrape import scrape

    return {
        "nodes": nodes,
        "samples": nodes * 8 * 20,
        "bytes": len(scrape(nodes, seed=2)),
        "rows_identical": True,
        "isolation": "one fresh worker process per contender; setup frozen; own gc.collect() timed",
        "timings": {name: t.as_dict() for name, t in timings.items()},
        "ratio_cold": round(ref / timings["ours_cold"].median_s, 1),
        "ratio_warm": round(ref / timings["ours_warm"].median_s, 1),
        "goal": {"cold": 20, "warm": 40},
        "dump": {
            "gpus_minutes": "{} hosts x {} GPUs x {} minutes x 8 fields".format(*_dump_size(quick)),
            "lines": dump_lines,
            "samples_identical": True,
            "per_line_samples_per_s": round(dump_lines / timings["dump_per_line"].median_s),
            "batch_samples_per_s": round(dump_lines / timings["dump_batch"].median_s),
            "speedup": round(timings["dump_per_line"].median_s / timings["dump_batch"].median_s, 2),
        },
    }


def _check_rows(nodes: int) -> None:
    from collectors.exposition import parse_text
    from collectors.samples import SeriesCache
    from tests.collectors.dcgm_scrape import scrape
    from tests.collectors.reference import our_rows, reference_rows

    warm = SeriesCache()
    for seed in (1, 2):
        text = scrape(nodes, seed=seed)
        for cache in (SeriesCache(), warm):
            ours = our_rows(parse_text(text, openmetrics=False, cache=cache), openmetrics=False)
            if ours != reference_rows(text, openmetrics=False):
                raise AssertionError("our rows differ from prometheus_client's")


def _dump_text(quick: bool) -> str:
    from tests.collectors.synthetic import dcgm_dump

    hosts, gpus, minutes = _dump_size(quick)
    return dcgm_dump(hosts, gpus, minutes, seed=5)


def _parse_dump(text: str, *, batch: bool) -> Any:
    from collectors.exposition import ExpositionParser, split_lines

    parser = ExpositionParser("dump", openmetrics=True)
    if not batch:
        parser.min_batch = 1 << 62
    for lines in split_lines(text, DUMP_BATCH_CHARS):
        parser.feed(lines)
    return parser.close()


def _check_dump(quick: bool) -> int:
    text = _dump_text(quick)
    a, b = _parse_dump(text, batch=False), _parse_dump(text, batch=True)
    same = (a.series_id, a.value.tobytes(), a.timestamp_ms, a.series) == (
        b.series_id,
        b.value.tobytes(),
        b.timestamp_ms,
        b.series,
    )
    if not same:
        raise AssertionError("the columnar path's samples differ from the per-line path's")
    return len(a)


def _worker(name: str, nodes: int, quick: bool, conn: Connection) -> None:
    fn = _contender(name, nodes, quick)
    gc.collect()
    gc.freeze()
    conn.send("ready")
    while conn.recv() == "run":
        started = time.perf_counter()
        fn()
        gc.collect()
        conn.send(time.perf_counter() - started)


def _contender(name: str, nodes: int, quick: bool) -> Callable[[], object]:
    from prometheus_client.parser import text_string_to_metric_families as families

    if name.startswith("dump_"):
        dump = _dump_text(quick)
        batch = name == "dump_batch"
        _parse_dump(dump, batch=batch)  # once untimed: polars starts its thread pool on first use
        return lambda: _parse_dump(dump, batch=batch)

    from collectors.exposition import parse_text
    from collectors.samples import SeriesCache
    from tests.collectors.dcgm_scrape import scrape

    text = scrape(nodes, seed=2)
    if name == "prometheus_client":
        return lambda: sum(len(f.samples) for f in families(text))
    if name == "ours_cold":
        return lambda: parse_text(text, openmetrics=False, cache=SeriesCache())
    warm = SeriesCache()
    parse_text(scrape(nodes, seed=1), openmetrics=False, cache=warm)
    return lambda: parse_text(text, openmetrics=False, cache=warm)
