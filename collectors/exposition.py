"""Parser for the Prometheus text format 0.0.4 and OpenMetrics 1.0, built for large inputs.

Every line first tries a fast path: its label block (the text between the first `{` and the last
`}`) and then its metric name are looked up in the series cache (a line without labels: the text
before its first space); on a hit only the value and timestamp are read, and a new name with a
known label block skips label parsing. Any line the fast path is not sure about goes through the
full parser, which is the reference: the fast path only ever accepts what the full parser would
accept, with the same result.

OpenMetrics batches of `min_batch` lines or more (a file's, as `collectors.bounded.lines` reads it)
first go through the columnar path of collectors/exposition_batch.py: in a dump each series' samples
come as one run of lines with the same series text, so a run's series is looked up and its family's
rules entered once, and its values and timestamps are read and checked as arrays (about 5x the
per-line path on a day dump; docs/performance.md, "Parse"). Whatever it is not sure of it hands to
the per-line path, line by line from the first line in doubt, so samples and errors are the same.

Names are kept as exposed: a counter called `DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION` stays so (unlike
prometheus_client, which appends `_total`). Timestamps become integer milliseconds. Exemplars are
validated and dropped. Errors raise `InputError` naming the source and the line.

Bounds (`LimitsConfig`): a line longer than `max_line_length`, a label set past `max_labels` or its
name and value lengths, and more than `max_series` new series in one input are refused, naming the
limit and the line.
"""

from __future__ import annotations

import gc
from collections.abc import Iterable, Iterator

from collectors.exposition_batch import MIN_BATCH, MIN_RUN, feed_openmetrics
from collectors.exposition_text import TextFamilies, parse_text_line
from collectors.labels import METRIC_NAME, LabelError, scan_openmetrics
from collectors.numbers import NO_TIMESTAMP, om_timestamp_ms, om_value
from collectors.openmetrics import OpenMetricsState, Rule
from collectors.samples import Samples, Series, SeriesCache
from gpusteward.config.limits import DEFAULT_LIMITS, LimitsConfig
from gpusteward.errors import InputError

_NUMBER_CHARS = "0123456789.eE+-"
_TS_CACHE_LIMIT = 1_000_000
_EXEMPLAR_LABEL_LIMIT = 128


class ExpositionParser:
    """Streaming parser: `feed` batches of lines (without their line breaks), then `close`.

    `take` hands over the samples parsed so far, so a caller can work in bounded memory.
    """

    def __init__(
        self,
        source: str,
        *,
        openmetrics: bool,
        cache: SeriesCache | None = None,
        limits: LimitsConfig = DEFAULT_LIMITS,
    ) -> None:
        self.source = source
        self.openmetrics = openmetrics
        self.cache = cache if cache is not None else SeriesCache()
        self.cache.limits = limits
        self.limits = limits
        self._series_at_start = len(self.cache.series)
        self.lines_read = 0
        self._samples = Samples(self.cache.series)
        self._ts: dict[str, int] = {}
        self._eof = False
        self._text = TextFamilies(self.cache)
        self._om = OpenMetricsState(source, self.cache)
        self._prev_sid = -1
        self._prev_ts = NO_TIMESTAMP
        self._prev_rule: Rule | None = None
        # Batches of at least `min_batch` lines try the columnar path for runs of `min_run` lines of
        # one series (collectors/exposition_batch.py); tests lower both to exercise it on small inputs.
        self.min_batch = MIN_BATCH
        self.min_run = MIN_RUN

    def feed(self, lines: Iterable[str]) -> None:
        """Parse more lines. Each line is given without its trailing newline."""
        # The parser makes no reference cycles; the collector only slows the many small objects
        # of a cold parse (about a third of its time), so it pauses while lines are read.
        if isinstance(lines, list):
            self._check_lengths(lines)
        else:
            lines = self._bounded(lines)
        enabled = gc.isenabled()
        gc.disable()
        try:
            if self.openmetrics and isinstance(lines, list) and len(lines) >= self.min_batch:
                feed_openmetrics(self, lines, self.min_run)
            elif self.openmetrics:
                self._feed_om(lines)
            else:
                self._feed_text(lines)
        finally:
            if enabled:
                gc.enable()
        if len(self.cache.series) - self._series_at_start > self.limits.max_series:
            raise InputError(
                self.source,
                f"more than {self.limits.max_series} series (limits.max_series) by this line",
                line=self.lines_read,
            )

    def _check_lengths(self, lines: list[str]) -> None:
        limit = self.limits.max_line_length
        if lines and max(map(len, lines)) > limit:
            first = next(i for i, line in enumerate(lines) if len(line) > limit)
            raise self._too_long(self.lines_read + first + 1)

    def _bounded(self, lines: Iterable[str]) -> Iterator[str]:
        limit = self.limits.max_line_length
        for i, line in enumerate(lines, start=self.lines_read + 1):
            if len(line) > limit:
                raise self._too_long(i)
            yield line

    def _too_long(self, lineno: int) -> InputError:
        limit = self.limits.max_line_length
        return InputError(self.source, f"line longer than {limit} characters (limits.max_line_length)", line=lineno)

    def take(self) -> Samples:
        """The samples parsed since the last `take`."""
        out, self._samples = self._samples, Samples(self.cache.series)
        return out

    def close(self) -> Samples:
        """End of input. OpenMetrics must have ended with `# EOF`."""
        if self.openmetrics and not self._eof:
            raise InputError(
                self.source,
                "no '# EOF' line where the input ends: it is truncated (or not OpenMetrics)",
                line=self.lines_read + 1,
            )
        return self.take()

    # -- text format 0.0.4 ----------------------------------------------------------------
    # Fast-path keys (see SeriesCache): the text between the first "{" and the last "}", then the
    # name before the "{"; for a line without braces the text before its first space.
    def _feed_text(self, lines: Iterable[str]) -> None:  # noqa: PLR0915 - one loop, inlined for speed
        cache = self.cache
        get = cache.bodies.get
        blocks = cache.label_blocks.get
        comments = cache.comments.get
        table = cache.series
        ctx_of = cache.context_of
        ts_get = self._ts.get
        samples = self._samples
        add_sid, add_value, add_ts = samples.series_id.append, samples.value.append, samples.timestamp_ms.append
        families = self._text
        family, type_, allowed, ctx = families.state
        no_ts = NO_TIMESTAMP
        new_series = tuple.__new__
        lineno = self.lines_read
        for line in lines:
            lineno += 1
            if not line:
                continue  # blank lines are allowed in 0.0.4; a file of them must stay cheap
            name, brace, tail = line.partition("{")
            if brace:
                inner, brace, rest = tail.rpartition("}")
                # A label block is parsed once for all the names that use it.
                entry = (blocks(inner) or cache.block(inner)) if brace else None
                sid = None
                if entry is not None:
                    sid = entry[2].get((name, ctx))
                    if sid is None and name in allowed:  # a valid name of the current family
                        sid = entry[2][name, ctx] = len(table)
                        table.append(new_series(Series, (name, entry[0], family, type_)))
                        ctx_of.append(ctx)
            else:
                comment = comments(line)
                if comment is not None:
                    if comment[0] or comment[1][0] != family:
                        family, type_, allowed, ctx = families.state = comment[1]
                    continue
                j = line.find(" ")
                sid = get(line[:j]) if j > 0 else None
                if sid is not None and ctx_of[sid] != ctx:
                    sid = None
                rest = line[j:]
            if sid is not None and "_" not in rest:  # float() takes `1_000`, Go does not
                try:
                    add_value(float(rest))
                    add_sid(sid)
                    add_ts(no_ts)
                    continue
                except ValueError:
                    parts = rest.split()
                    ts = ts_get(parts[1], no_ts) if len(parts) == 2 else no_ts
                    if ts != no_ts:
                        try:
                            add_value(float(parts[0]))
                            add_sid(sid)
                            add_ts(ts)
                            continue
                        except ValueError:
                            pass
            families.state = (family, type_, allowed, ctx)
            self.lines_read = lineno
            self._text_line(line, lineno)
            family, type_, allowed, ctx = families.state
        families.state = (family, type_, allowed, ctx)
        self.lines_read = lineno

    def _text_line(self, line: str, lineno: int) -> None:
        try:
            parsed = parse_text_line(line, self._text, self._ts)
        except (ValueError, LabelError) as exc:
            raise InputError(self.source, str(exc), line=lineno) from None
        if parsed is not None:
            sid, value, ts = parsed
            if len(self._ts) > _TS_CACHE_LIMIT:
                self._ts.clear()
            self._samples.series_id.append(sid)
            self._samples.value.append(value)
            self._samples.timestamp_ms.append(ts)

    # -- OpenMetrics ----------------------------------------------------------------------
    def _feed_om(self, lines: Iterable[str]) -> None:  # noqa: PLR0912, PLR0915 - one loop, inlined for speed
        cache = self.cache
        get = cache.bodies.get
        blocks = cache.label_blocks_om.get
        ctx_of = cache.context_of
        ts_get = self._ts.get
        samples = self._samples
        add_sid, add_value, add_ts = samples.series_id.append, samples.value.append, samples.timestamp_ms.append
        om = self._om
        enter, check = om.enter, om.check
        no_ts = NO_TIMESTAMP
        chars = _NUMBER_CHARS
        lineno = self.lines_read
        it: Iterator[str] = iter(lines)
        if self._eof:
            self._after_eof(it, lineno)
        prev_sid, prev_ts, prev_rule = self._prev_sid, self._prev_ts, self._prev_rule
        for line in it:
            lineno += 1
            name, brace, rest = line.partition("{")
            if brace:
                inner, brace, rest = rest.rpartition("}")
                entry = blocks(inner) if brace else None
                sid = entry[2].get((name, om.ctx)) if entry is not None else None
            else:
                j = line.find(" ")
                sid = get(line[:j]) if j > 0 else None
                rest = line[j:]
            if sid is not None:
                parts = rest.split(" ")
                n = len(parts)
                if n == 3 and not parts[0]:
                    ts = ts_get(parts[2], no_ts)
                    tok = parts[1] if ts != no_ts else ""
                elif n == 2 and not parts[0]:
                    ts = no_ts
                    tok = parts[1]
                else:
                    tok = ""
                if tok:
                    if tok.strip(chars):
                        tok = ""  # NaN, Inf or not a number: the full parser decides
                    else:
                        try:
                            value = float(tok)
                        except ValueError:
                            tok = ""
                if tok:
                    rule: Rule | None = None
                    if sid == prev_sid:
                        if ts >= prev_ts and (prev_ts != no_ts or ts == no_ts):
                            rule = prev_rule
                    elif ctx_of[sid] == om.ctx:
                        rule = enter(sid, ts, prev_sid, prev_ts, lineno)
                    if rule is not None:
                        if rule.flags:
                            check(rule, value, ts, lineno)
                        add_sid(sid)
                        add_value(value)
                        add_ts(ts)
                        prev_sid, prev_ts, prev_rule = sid, ts, rule
                        continue
            self._prev_sid, self._prev_ts, self._prev_rule = prev_sid, prev_ts, prev_rule
            self.lines_read = lineno
            self._om_line(line, lineno)
            prev_sid, prev_ts, prev_rule = self._prev_sid, self._prev_ts, self._prev_rule
            if self._eof:
                self._after_eof(it, lineno)
        self._prev_sid, self._prev_ts, self._prev_rule = prev_sid, prev_ts, prev_rule
        self.lines_read = lineno

    def _after_eof(self, it: Iterator[str], lineno: int) -> None:
        for line in it:
            raise InputError(self.source, f"text after '# EOF': {line[:80]!r}", line=lineno + 1)

    def _om_line(self, line: str, lineno: int) -> None:
        om = self._om
        if not line:
            raise om.fail("blank line (not allowed in OpenMetrics)", lineno)
        if line[0] == "#":
            if self._prev_sid >= 0:
                om.remember(self._prev_sid, self._prev_ts)
            self._prev_sid, self._prev_ts, self._prev_rule = -1, NO_TIMESTAMP, None
            if line == "# EOF":
                om.close(lineno)
                self._eof = True
            else:
                om.metadata(line, lineno)
            return
        try:
            name, labels, body_end, value, ts, exemplar = self._om_parse(line)
        except (ValueError, LabelError) as exc:
            raise om.fail(str(exc), lineno) from None
        ctx = om.family_for(name, lineno)
        try:
            sid = self.cache.series_id(name, labels, ctx)
        except LabelError as exc:
            raise om.fail(str(exc), lineno) from None
        self.cache.remember(line, name, body_end, sid)
        if sid == self._prev_sid:
            om.order(self._prev_ts, ts, lineno)
            rule = self._prev_rule
            assert rule is not None
        else:
            rule = om.enter(sid, ts, self._prev_sid, self._prev_ts, lineno)
        if exemplar and not rule.exemplars:
            raise om.fail("exemplars are allowed only on counter _total and histogram _bucket samples", lineno)
        if rule.flags:
            om.check(rule, value, ts, lineno)
        self._samples.series_id.append(sid)
        self._samples.value.append(value)
        self._samples.timestamp_ms.append(ts)
        self._prev_sid, self._prev_ts, self._prev_rule = sid, ts, rule

    def _om_parse(self, line: str) -> tuple[str, tuple[tuple[str, str], ...], int, float, int, bool]:
        """(name, labels, end of the series text, value, timestamp, has exemplar) of a sample line."""
        m = METRIC_NAME.match(line)
        if m is None:
            raise ValueError(f"invalid metric name at the start of {line[:80]!r}")
        name, pos = m.group(), m.end()
        labels: tuple[tuple[str, str], ...] = ()
        if line.startswith("{", pos):
            last = line.rfind("}")
            cached = self.cache.label_blocks_om.get(line[pos + 1 : last]) if last > pos else None
            if cached is not None:
                labels, pos = cached[0], last + 1
            else:
                end, labels = scan_openmetrics(line, pos)
                if end == last + 1:
                    self.cache.add_block(self.cache.label_blocks_om, line[pos + 1 : last], labels)
                pos = end
        body_end = pos
        if not line.startswith(" ", pos):
            raise ValueError("expected one space and a value after the series")
        value_tok, sep, rest = line[pos + 1 :].partition(" ")
        value = om_value(value_tok)
        ts = NO_TIMESTAMP
        exemplar: str | None = None
        if sep:
            if rest.startswith("# "):
                exemplar = rest[2:]
            else:
                ts_tok, sep, rest = rest.partition(" ")
                ts = self._om_ts(ts_tok)
                if sep:
                    if not rest.startswith("# "):
                        raise ValueError(f"unexpected text after the timestamp: {rest[:40]!r}")
                    exemplar = rest[2:]
        if exemplar is not None:
            _check_exemplar(exemplar)
        return name, labels, body_end, value, ts, exemplar is not None

    def _om_ts(self, tok: str) -> int:
        ts = self._ts.get(tok)
        if ts is None:
            ts = om_timestamp_ms(tok)
            if len(self._ts) > _TS_CACHE_LIMIT:
                self._ts.clear()
            self._ts[tok] = ts
        return ts


def _check_exemplar(text: str) -> None:
    """`{labels} value [timestamp]` after `# `."""
    if not text.startswith("{"):
        raise ValueError("an exemplar must start with '{' after ' # '")
    end, labels = scan_openmetrics(text, 0)
    if sum(len(k) + len(v) for k, v in labels) > _EXEMPLAR_LABEL_LIMIT:
        raise ValueError("exemplar labels longer than 128 characters")
    if not text.startswith(" ", end):
        raise ValueError("expected a space and a value after the exemplar labels")
    value_tok, sep, ts_tok = text[end + 1 :].partition(" ")
    om_value(value_tok)
    if sep:
        om_timestamp_ms(ts_tok)


def parse_text(
    text: str,
    *,
    source: str = "<text>",
    openmetrics: bool,
    cache: SeriesCache | None = None,
    limits: LimitsConfig = DEFAULT_LIMITS,
) -> Samples:
    """Parse a whole exposition held in a string."""
    parser = ExpositionParser(source, openmetrics=openmetrics, cache=cache, limits=limits)
    for batch in split_lines(text):
        parser.feed(batch)
    return parser.close()


def split_lines(text: str, chunk: int = 1 << 20) -> Iterator[list[str]]:
    """The lines of `text` in batches of about `chunk` characters (a final newline ends the last
    line; it does not start an empty one)."""
    start, n = 0, len(text)
    while start < n:
        end = text.find("\n", start + chunk)
        if end < 0:
            lines = text[start:].split("\n")
            if not lines[-1]:
                lines.pop()
            yield lines
            return
        yield text[start:end].split("\n")
        start = end + 1


def parse_lines(
    lines: Iterable[str],
    *,
    source: str = "<lines>",
    openmetrics: bool,
    cache: SeriesCache | None = None,
    limits: LimitsConfig = DEFAULT_LIMITS,
) -> Samples:
    """Parse lines as a file iterates them (each with its newline, the last one perhaps without)."""
    parser = ExpositionParser(source, openmetrics=openmetrics, cache=cache, limits=limits)
    parser.feed(line[:-1] if line.endswith("\n") else line for line in lines)
    return parser.close()
