"""Columnar fast path for OpenMetrics dumps: each run of one series' lines is read at once.

A dump (the simulator's day files, `promtool tsdb dump-openmetrics`, a backfill) writes each
series' samples together, `name{labels} value timestamp`, 1,440 lines a day with the same series
text. The per-line fast path reads that text again on every line (partition, hash, dict lookup:
about 3.7 us a line). Here a batch of lines is cut into runs that share the text before their value
(`find_runs`: a few `startswith` probes, then `min` and `max` of the run, which prove it: every
string between two strings with one prefix has that prefix). Each run's tails are checked to be
exactly `number number` with bytes operations, all runs' tails of the batch are read by polars' CSV
reader in one call (on the characters of an OpenMetrics number its float parsing is Python's
`float`), and the OpenMetrics rules are applied once per run: the series lookup and `enter` for its
first sample, its timestamps' order and the value checks as array operations.

The per-line parser stays the reference, and anything this path is not sure of is handed to it
from the first line in doubt: lines outside a long run (comments, `# EOF`, interleaved series),
the first line of a series not cached yet or of a new family (after it the run goes on here),
tails that are not two plain numbers (NaN, Inf, an exemplar, no timestamp, spaces), timestamps
that go back or leave the int64 range, values a check refuses, histogram families (whose
MetricPoints are checked sample by sample). It takes only what the per-line path would accept,
with the same series ids, values and timestamps; whatever it refuses, it refuses itself with its
own message and line number.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
import polars as pl

from collectors.numbers import NO_TIMESTAMP
from collectors.openmetrics import COUNT, COUNTER, INFO, NOT_NAN, POINT_CHECK, QUANTILE, STATESET, Rule

if TYPE_CHECKING:
    from collectors.exposition import ExpositionParser

MIN_BATCH = 512  # smaller batches (a scrape, a test document) are cheaper line by line
MIN_RUN = 32  # shorter runs are left to the per-line path
_MAX_MISSES = 4
_NUMBER_BYTES = b"0123456789.eE+-"  # an OpenMetrics realnumber's characters, as the per-line path takes them
_TS_LIMIT = 2.0**62  # milliseconds; beyond, the per-line path saturates at the int64 ends
_SCHEMA = {"v": pl.Float64, "t": pl.Float64}

Run = tuple[int, int, str]  # first line, end, the series text with the space after it
F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]


def find_runs(lines: list[str], min_run: int = MIN_RUN) -> list[Run]:
    """Runs of at least `min_run` consecutive lines that start with one `series text + " "`, where
    the series text is a line's text before its last two spaces. Lines between runs are in none."""
    runs: list[Run] = []
    n = len(lines)
    skip = max(1, min_run // 2)  # where no run starts, probe every `skip` lines, not every line
    misses = 0  # runs the probes guessed but `min`/`max` disproved: each costs a pass over its lines
    i = 0
    while i + min_run <= n and misses < _MAX_MISSES:
        line = lines[i]
        last = line.rfind(" ")
        cut = line.rfind(" ", 0, last) if last > 0 else -1
        prefix = line[: cut + 1]
        if cut <= 0 or not lines[i + min_run - 1].startswith(prefix):
            i += skip
            continue
        end = _run_end(lines, i + min_run, prefix)
        block = lines[i:end]
        if not (min(block).startswith(prefix) and max(block).startswith(prefix)):
            # The probes skipped a line of another series: keep only the contiguous part. Input
            # built to fool the probes gets a few such passes, then its batch goes line by line.
            misses += 1
            end = next(j for j in range(i + 1, end) if not lines[j].startswith(prefix))
            if end - i < min_run:
                i += skip
                continue
        runs.append((i, end, prefix))
        i = end
    return runs


def _run_end(lines: list[str], lo: int, prefix: str) -> int:
    """Where the run continuing at `lines[lo - 1]` ends, found by galloping probes: exact for a
    contiguous run (`find_runs` proves it)."""
    n = len(lines)
    step, hi = 1, lo
    while hi < n and lines[hi].startswith(prefix):
        lo = hi + 1
        hi = lo + step
        step *= 2
    hi = min(hi, n)
    while lo < hi:
        mid = (lo + hi) // 2
        if lines[mid].startswith(prefix):
            lo = mid + 1
        else:
            hi = mid
    return lo


def plain_rows(raw: bytes, rows: int) -> bool:
    """Whether `raw` is exactly `rows` lines of `number number` (number characters only, one
    space, no empty token)."""
    if raw.translate(None, _NUMBER_BYTES) != b" \n" * (rows - 1) + b" ":
        return False
    return b" \n" not in raw and b"\n " not in raw and not raw.startswith(b" ") and not raw.endswith(b" ")


def _plain_prefix(tails: list[str]) -> int:
    """How many of `tails` from the first are plain `number number` (the block as a whole is not)."""
    for i, tail in enumerate(tails):
        if not tail.isascii() or not plain_rows(tail.encode(), 1):
            return i
    return len(tails)


def read_numbers(lines: list[str], runs: list[Run]) -> list[tuple[F64, I64]]:
    """For each run, the values and millisecond timestamps of its leading lines whose tail is two
    numbers the per-line path reads the same way (possibly none)."""
    blocks: list[bytes] = []
    sizes: list[int] = []
    for start, end, prefix in runs:
        k = len(prefix)
        tails = [line[k:] for line in lines[start:end]]
        raw = "\n".join(tails).encode(errors="replace")
        good = end - start
        if not plain_rows(raw, good):
            good = _plain_prefix(tails)
            raw = "\n".join(tails[:good]).encode(errors="replace")
        if good:
            blocks.append(raw)
        sizes.append(good)
    if not blocks:
        return [(np.zeros(0), np.zeros(0, np.int64)) for _ in runs]
    frame = pl.read_csv(
        b"\n".join(blocks), has_header=False, separator=" ", quote_char=None, schema=_SCHEMA, ignore_errors=True
    )
    values = frame["v"].to_numpy()
    ms = np.rint(frame["t"].to_numpy() * 1000.0)
    # NaN where a token was not a number (`1e`, `.`): polars leaves it null, Python refuses it.
    ok = ~np.isnan(values) & (np.abs(ms) < _TS_LIMIT)
    ms_int = np.where(ok, ms, 0.0).astype(np.int64)
    out: list[tuple[F64, I64]] = []
    at = 0
    for size in sizes:
        bad = np.flatnonzero(~ok[at : at + size])
        good = int(bad[0]) if len(bad) else size
        out.append((values[at : at + good], ms_int[at : at + good]))
        at += size
    return out


def feed_openmetrics(parser: ExpositionParser, lines: list[str], min_run: int = MIN_RUN) -> None:
    """Parse `lines` as `parser._feed_om` would, taking long runs of one series in bulk."""
    runs = find_runs(lines, min_run)
    if not runs:
        parser._feed_om(lines)
        return
    base = parser.lines_read
    done = 0
    for (start, end, prefix), (values, ms) in zip(runs, read_numbers(lines, runs), strict=True):
        _one_by_one(parser, lines, base, done, start)
        done = start
        if parser._eof:
            break  # the per-line path refuses the next line
        done = _take_run(parser, lines, base, start, prefix, values, ms)
        _one_by_one(parser, lines, base, done, end)
        done = end
    _one_by_one(parser, lines, base, done, len(lines))
    parser.lines_read = base + len(lines)


def _one_by_one(parser: ExpositionParser, lines: list[str], base: int, start: int, end: int) -> None:
    if start < end:
        parser.lines_read = base + start
        parser._feed_om(lines[start:end])


def _series(parser: ExpositionParser, prefix: str) -> int | None:
    """The series id the per-line fast path finds for a line starting with `prefix`, or None."""
    text = prefix[:-1]
    cache = parser.cache
    name, brace, rest = text.partition("{")
    if brace:
        inner, brace, after = rest.rpartition("}")
        entry = cache.label_blocks_om.get(inner) if brace and not after else None
        return entry[2].get((name, parser._om.ctx)) if entry is not None else None
    return cache.bodies.get(text) if " " not in text else None


def _take_run(  # noqa: PLR0917 - the run's parts, passed as they are
    parser: ExpositionParser, lines: list[str], base: int, start: int, prefix: str, values: F64, ms: I64
) -> int:
    """Append the samples of the run's lines from `start` that the per-line path would accept as
    they are; return the index of the first line left to it."""
    stop = start + len(values)
    i = start
    sid = _series(parser, prefix)
    if sid is None or (sid != parser._prev_sid and parser.cache.context_of[sid] != parser._om.ctx):
        # A series not cached yet, or a new family: its first line goes through the full parser.
        if i == stop:
            return i
        _one_by_one(parser, lines, base, i, i + 1)
        i += 1
        sid = _series(parser, prefix)
        if sid is None or sid != parser._prev_sid:
            return i
    if i == stop:
        return i
    om = parser._om
    prev_sid, prev_ts = parser._prev_sid, parser._prev_ts
    v, t = values[i - start :], ms[i - start :]
    lineno = base + i + 1
    rule = parser._prev_rule if sid == prev_sid else om.rule(sid, lineno)
    assert rule is not None
    if rule.flags & POINT_CHECK:
        return i  # a histogram's points are checked sample by sample
    ok = np.empty(len(t), dtype=bool)
    if sid == prev_sid:
        ok[0] = prev_ts != NO_TIMESTAMP and t[0] >= prev_ts
    else:
        ok[0] = True  # `enter` checks the first sample's order against the family
    np.greater_equal(t[1:], t[:-1], out=ok[1:])
    if rule.check:
        ok &= _values_ok(rule, v)
    bad = np.flatnonzero(~ok)
    taken = int(bad[0]) if len(bad) else len(t)
    if taken == 0:
        return i
    if sid != prev_sid:
        om.enter(sid, int(t[0]), prev_sid, prev_ts, lineno)
    samples = parser._samples
    samples.series_id.frombytes(np.full(taken, sid, dtype=np.int64).tobytes())
    samples.value.frombytes(v[:taken].tobytes())
    samples.timestamp_ms.frombytes(t[:taken].tobytes())
    parser._prev_sid, parser._prev_ts, parser._prev_rule = sid, int(t[taken - 1]), rule
    return i + taken


def _values_ok(rule: Rule, v: F64) -> npt.NDArray[np.bool_]:
    """`openmetrics._value_problem(check, value) == ""` for every value (no NaN reaches here)."""
    c = rule.check
    if c == STATESET:
        ok = (v == 0.0) | (v == 1.0)
    elif c == INFO:
        ok = v == 1.0
    elif c == QUANTILE:
        ok = ~(v < 0.0)
    elif c == COUNTER:
        ok = v >= 0.0
    elif c == NOT_NAN:
        ok = ~np.isnan(v)
    elif c == COUNT:
        ok = (v >= 0.0) & np.isfinite(v) & (v == np.floor(v))
    else:
        ok = np.ones(len(v), dtype=bool)
    return np.asarray(ok, dtype=np.bool_)
