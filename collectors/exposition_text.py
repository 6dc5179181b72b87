"""The full (reference) reading of one line of the Prometheus text format 0.0.4.

Lenient where Prometheus is: blank lines, any `#` comment (`# NOTE ...`), spaces or tabs between
tokens, spaces inside label blocks, a trailing comma, quoted UTF-8 names. A sample belongs to the
family of the `# TYPE` or `# HELP` line before it when its name fits that family (`x`, or
`x_bucket` `x_sum` `x_count` for a histogram); any other sample is an untyped family of its own,
as prometheus_client decides.
"""

from __future__ import annotations

import re

from collectors.labels import METRIC_NAME, Labels, scan_text, unescape
from collectors.numbers import NO_TIMESTAMP, text_timestamp_ms, text_value
from collectors.samples import SeriesCache

_COMMENT = re.compile(r'#[ \t]+(HELP|TYPE)[ \t]+("(?:[^"\\]|\\.)*"|[^ \t]+)(?:[ \t]+(.*))?$')
_SUFFIXES: dict[str, tuple[str, ...]] = {
    "summary": ("", "_count", "_sum"),
    "histogram": ("_count", "_sum", "_bucket"),
}


FamilyState = tuple[str, str, frozenset[str], int]  # family, type, sample names it takes, context id


class TextFamilies:
    """Which family the next sample line belongs to: `state` changes with `# HELP`/`# TYPE` lines."""

    def __init__(self, cache: SeriesCache) -> None:
        self.cache = cache
        self.state: FamilyState = ("", "untyped", frozenset(), -1)

    def comment(self, line: str) -> None:
        """Apply a comment line; `# HELP`/`# TYPE` effects are remembered in `cache.comments`."""
        m = _COMMENT.match(line)
        if m is None:
            return  # any other comment
        kind, name, rest = m.group(1), m.group(2), m.group(3)
        if name.startswith('"'):
            name = unescape(name[1:-1])
        elif METRIC_NAME.fullmatch(name) is None:
            raise ValueError(f"invalid metric name {name!r} in # {kind}")
        if kind == "TYPE":
            words = (rest or "").split()
            if not words:
                raise ValueError(f"# TYPE {name} without a type")
            state = self.family_state(name, words[0])
        else:
            state = self.family_state(name, "untyped")
        self.cache.comments[line] = (kind == "TYPE", state)
        self.apply(kind == "TYPE", state)

    def apply(self, is_type: bool, state: FamilyState) -> None:
        # A HELP line for the family already open keeps its type.
        if is_type or state[0] != self.state[0]:
            self.state = state

    def family_state(self, name: str, type_: str) -> FamilyState:
        # Only names that may be written unquoted: the fast path takes `name{` lines by this set.
        allowed = frozenset(n for n in _names(name, type_) if METRIC_NAME.fullmatch(n))
        return name, type_, allowed, self.cache.context(name, type_)

    def ctx_for(self, name: str) -> int:
        family, type_, allowed, ctx = self.state
        if name in allowed or name in _names(family, type_):
            return ctx
        self.state = self.family_state(name, "untyped")
        return self.state[3]


def _names(family: str, type_: str) -> set[str]:
    return {family + s for s in _SUFFIXES.get(type_, ("",))}


def parse_text_line(line: str, families: TextFamilies, ts_cache: dict[str, int]) -> tuple[int, float, int] | None:
    """(series id, value, timestamp) of a sample line, None for blank and comment lines.

    Raises ValueError (or LabelError) saying what is wrong. Registers the series text in the cache
    when the fast path would find it there.
    """
    s = line.strip()
    if not s:
        return None
    if s[0] == "#":
        families.comment(s)
        return None
    cache = families.cache
    name, labels, lid, body_end = _series_part(s, cache)
    rest = s[body_end:]
    if s[body_end - 1] != "}" and rest and not rest[0].isspace():
        raise ValueError(f"expected a space after the metric name {name!r}")
    tokens = rest.split()
    if not tokens:
        raise ValueError("missing value")
    if len(tokens) > 2:
        raise ValueError(f"unexpected text after the timestamp: {tokens[2][:40]!r}")
    value = text_value(tokens[0])
    ts = NO_TIMESTAMP
    if len(tokens) == 2:
        ts = ts_cache.get(tokens[1], NO_TIMESTAMP)
        if ts == NO_TIMESTAMP:
            ts = ts_cache[tokens[1]] = text_timestamp_ms(tokens[1])
    sid = cache.series_id(name, labels, families.ctx_for(name), lid)
    cache.remember(line, name, body_end, sid)
    if name not in cache.names and METRIC_NAME.fullmatch(name):
        cache.names.add(name)
    return sid, value, ts


def _series_part(s: str, cache: SeriesCache) -> tuple[str, Labels, int, int]:
    """(metric name, labels, labels id, index after the series text) of a stripped sample line."""
    i, j = s.rfind("}"), s.find("{")
    if 0 < j < i:
        block = cache.label_blocks.get(s[j + 1 : i])
        name = s[:j]
        if block is not None and (name in cache.names or METRIC_NAME.fullmatch(name)):
            return name, block[0], block[1], i + 1
    m = METRIC_NAME.match(s)
    pos = m.end() if m else 0
    name = s[:pos]
    p = pos
    while s.startswith((" ", "\t"), p):
        p += 1
    if not s.startswith("{", p):
        if not name:
            raise ValueError(f"a sample line must start with a metric name: {s[:80]!r}")
        return name, (), cache.labels_id(()), pos
    end, quoted, labels = scan_text(s, p)
    lid = cache.labels_id(labels)
    if quoted is not None:
        if name:
            raise ValueError("metric name given both before and inside the braces")
        name = quoted
    elif p == j and end == i + 1:
        cache.add_block(cache.label_blocks, s[j + 1 : i], labels)
    if not name:
        raise ValueError("a sample line needs a metric name")
    return name, labels, lid, end
