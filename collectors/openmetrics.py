"""OpenMetrics 1.0 rules beyond line syntax: families, metadata, groups, histograms, value limits.

The rules are those of the specification as its official parser suite tests them. One documented
relaxation: a family without any metadata line (the shape `promtool tsdb dump-openmetrics`
prints, which orders series by label set rather than by family) may appear in several runs, and
its series need not be contiguous; each of its series must still keep its timestamps in order.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from collectors.labels import METRIC_NAME, unescape
from collectors.numbers import NO_TIMESTAMP
from collectors.samples import Series, SeriesCache
from gpusteward.errors import InputError

TYPES = frozenset({"counter", "gauge", "histogram", "gaugehistogram", "stateset", "info", "summary", "unknown"})
_SUFFIXES: dict[str, tuple[str, ...]] = {
    "counter": ("_total", "_created"),
    "summary": ("", "_count", "_sum", "_created"),
    "histogram": ("_count", "_sum", "_bucket", "_created"),
    "gaugehistogram": ("_gcount", "_gsum", "_bucket"),
    "info": ("_info",),
}
_HISTOGRAMS = ("histogram", "gaugehistogram")

# Value checks, by sample kind.
NO_CHECK, NOT_NAN, COUNTER, COUNT, QUANTILE, INFO, STATESET = range(7)
# Rule flags: anything set sends the sample through `OpenMetricsState.check`.
VALUE_CHECK, POINT_CHECK = 1, 2


@dataclass(slots=True)
class Rule:
    """What the rules require of one series' samples."""

    flags: int
    check: int
    group: int  # samples of one group share timestamps; bare families group by series
    suffix: str
    bound: float  # the `le` of a bucket
    exemplars: bool


@dataclass(slots=True)
class _Point:
    """One histogram MetricPoint (a group at one timestamp) as its samples arrive."""

    group: int
    ts: int
    bound: float | None = None
    value: float = 0.0
    count: float | None = None
    negative_buckets: bool = False
    has_sum: bool = False
    has_gsum: bool = False
    negative_gsum: bool = False


@dataclass(slots=True)
class _Family:
    name: str
    ctx: int
    allowed: frozenset[str]
    type: str = "unknown"
    metadata: bool = False
    seen: set[str] = field(default_factory=set)  # HELP TYPE UNIT
    unit: str = ""
    has_samples: bool = False
    group: int | None = None
    groups: set[int] = field(default_factory=set)
    point: _Point | None = None


class OpenMetricsState:
    """Family-level state of one OpenMetrics document."""

    def __init__(self, source: str, cache: SeriesCache) -> None:
        self.source = source
        self.cache = cache
        self.family: _Family | None = None
        self.ctx = -1  # context id of the open family
        self._names: dict[str, str | None] = {}  # sample names taken -> bare family name or None
        self._rules: tuple[dict[int, Rule], dict[int, Rule]] = ({}, {})  # bare families, the others
        self._groups: dict[tuple[str, tuple[tuple[str, str], ...]], int] = {}
        self._bare_ts: dict[int, int] = {}  # series id -> last timestamp, for bare families

    def fail(self, problem: str, line: int) -> InputError:
        return InputError(self.source, problem, line=line)

    # -- metadata -------------------------------------------------------------------------
    def metadata(self, line: str, lineno: int) -> None:
        parts = line.split(" ", 3)
        if len(parts) != 4 or parts[0] != "#" or parts[1] not in ("HELP", "TYPE", "UNIT"):
            raise self.fail(f"not a valid metadata line (# HELP|TYPE|UNIT name text): {line[:80]!r}", lineno)
        kind, name, text = parts[1], parts[2], parts[3]
        if METRIC_NAME.fullmatch(name) is None:
            raise self.fail(f"invalid metric name {name!r} in # {kind}", lineno)
        fam = self.family
        if fam is None or fam.name != name:
            self.close(lineno)
            fam = self._open(name, "unknown", metadata=True)
        if fam.has_samples:
            raise self.fail(f"# {kind} for {name} after its samples", lineno)
        if kind in fam.seen:
            raise self.fail(f"second # {kind} for {name}", lineno)
        fam.seen.add(kind)
        if kind == "TYPE":
            if text not in TYPES:
                raise self.fail(f"unknown type {text!r} for {name}", lineno)
            fam.type = text
            fam.allowed = frozenset(name + s for s in _SUFFIXES.get(text, ("",)))
            fam.ctx = self.ctx = self.cache.context(name, text)
        elif kind == "UNIT":
            fam.unit = text
        else:
            unescape(text)  # help text: any escapes are fine

    def _open(self, name: str, type_: str, *, metadata: bool) -> _Family:
        ctx = self.cache.context(name, type_)
        fam = _Family(name, ctx, frozenset((name,)), type_, metadata)
        self.family, self.ctx = fam, ctx
        return fam

    def family_for(self, name: str, lineno: int) -> int:
        """The context of the family a sample named `name` belongs to here; may open a new family."""
        fam = self.family
        if fam is not None and name in fam.allowed:
            return fam.ctx
        self.close(lineno)
        return self._open(name, "unknown", metadata=False).ctx

    def close(self, lineno: int) -> None:
        """End the open family: its names must not clash with earlier families'."""
        fam = self.family
        if fam is None:
            return
        self.family, self.ctx = None, -1
        if fam.point is not None:
            self._check_point(fam.point, fam.name, lineno)
        if fam.unit and not fam.name.endswith("_" + fam.unit):
            raise self.fail(f"unit {fam.unit!r} is not a suffix of {fam.name}", lineno)
        if fam.unit and fam.type in ("info", "stateset"):
            raise self.fail(f"a {fam.type} cannot have a unit ({fam.name})", lineno)
        owner = None if fam.metadata else fam.name
        for suffix in {*_SUFFIXES.get(fam.type, ()), ""}:
            taken = fam.name + suffix
            if taken in self._names and (owner is None or self._names[taken] != owner):
                raise self.fail(f"metric family {fam.name} clashes with an earlier use of {taken}", lineno)
            self._names[taken] = owner

    # -- samples --------------------------------------------------------------------------
    def rule(self, sid: int, lineno: int) -> Rule:
        """The rule of a series in the open family (rules differ between bare and other families)."""
        rules = self._rules[bool(self.family and self.family.metadata)]
        rule = rules.get(sid)
        if rule is None:
            rule = rules[sid] = self._make_rule(self.cache.series[sid], sid, lineno)
        return rule

    def _make_rule(self, s: Series, sid: int, lineno: int) -> Rule:
        fam, typ = s.family, s.type
        suffix = s.name[len(fam) :]
        labels = dict(s.labels)
        check, drop, bound = NO_CHECK, "", math.nan
        if typ == "stateset":
            if fam not in labels:
                raise self.fail(f"stateset sample without its {fam!r} label", lineno)
            check, drop = STATESET, fam
        elif typ == "info":
            check = INFO
        elif typ == "summary" and not suffix:
            q = _float(labels.get("quantile", "-1"))
            if not 0.0 <= q <= 1.0:
                raise self.fail("summary quantile label missing or not in [0, 1]", lineno)
            check, drop = QUANTILE, "quantile"
        elif typ in _HISTOGRAMS and suffix == "_bucket":
            le = labels.get("le", "NaN")
            bound = _float(le)
            if math.isnan(bound) or (math.isinf(bound) and le != "+Inf"):
                raise self.fail(f"bucket le label {le!r} is missing or not canonical", lineno)
            check, drop = COUNT, "le"
        elif suffix in ("_count", "_gcount") and typ in (*_HISTOGRAMS, "summary"):
            check = COUNT
        elif suffix in ("_total", "_sum") and typ in ("counter", "summary", "histogram"):
            check = COUNTER
        elif suffix == "_gsum" and typ == "gaugehistogram":
            check = NOT_NAN
        if not self.family or not self.family.metadata:
            group = -1 - sid  # bare family: one group per series
        else:
            key = (fam, tuple(sorted((k, v) for k, v in s.labels if k != drop)) if typ != "info" else ())
            group = self._groups.setdefault(key, len(self._groups))
        flags = (VALUE_CHECK if check else 0) | (POINT_CHECK if typ in _HISTOGRAMS else 0)
        exemplars = (typ in _HISTOGRAMS and suffix == "_bucket") or (typ == "counter" and suffix == "_total")
        return Rule(flags, check, group, suffix, bound, exemplars)

    def enter(self, sid: int, ts: int, prev_sid: int, prev_ts: int, lineno: int) -> Rule:
        """A sample of series `sid` follows one of another series (`prev_*`); check grouping."""
        fam = self.family
        assert fam is not None
        rule = self.rule(sid, lineno)
        if prev_sid >= 0:
            self._bare_ts[prev_sid] = prev_ts
        if not fam.metadata:
            last = self._bare_ts.get(sid)
            if last is not None:
                self.order(last, ts, lineno)
        elif rule.group == fam.group:
            self.order(prev_ts, ts, lineno, info=fam.type == "info")
        else:
            if rule.group in fam.groups:
                raise self.fail(f"samples of one {fam.name} group are not together", lineno)
            fam.groups.add(rule.group)
            fam.group = rule.group
        fam.has_samples = True
        return rule

    def remember(self, sid: int, ts: int) -> None:
        """The last timestamp of a series, kept for when a bare family comes back."""
        self._bare_ts[sid] = ts

    def order(self, before: int, ts: int, lineno: int, *, info: bool = False) -> None:
        if (before == NO_TIMESTAMP) != (ts == NO_TIMESTAMP):
            raise self.fail("some samples of a series have timestamps and some do not", lineno)
        if ts < before and not info:
            raise self.fail("timestamp goes backwards", lineno)

    def check(self, rule: Rule, value: float, ts: int, lineno: int) -> None:
        """Value limits and histogram structure for a sample whose rule has flags."""
        c = rule.check
        if c:
            problem = _value_problem(c, value)
            if problem:
                raise self.fail(problem, lineno)
        if rule.flags & POINT_CHECK:
            self._point(rule, value, ts, lineno)

    def _point(self, rule: Rule, value: float, ts: int, lineno: int) -> None:
        fam = self.family
        assert fam is not None
        p = fam.point
        if p is None or p.group != rule.group or p.ts != ts:
            if p is not None:
                self._check_point(p, fam.name, lineno)
            p = fam.point = _Point(rule.group, ts)
        suffix = rule.suffix
        if suffix == "_bucket":
            if rule.bound < 0:
                p.negative_buckets = True
            if p.bound is not None and rule.bound <= p.bound:
                raise self.fail(f"{fam.name} buckets are not in increasing le order", lineno)
            if value < p.value:
                raise self.fail(f"{fam.name} bucket counts decrease", lineno)
            p.bound, p.value = rule.bound, value
        elif suffix in ("_count", "_gcount"):
            p.count = value
        elif suffix == "_sum":
            p.has_sum = True
        elif suffix == "_gsum":
            p.has_gsum = True
            p.negative_gsum = value < 0

    def _check_point(self, p: _Point, name: str, lineno: int) -> None:
        problem = ""
        if p.bound != math.inf:
            problem = "has no +Inf bucket"
        elif p.count is not None and p.value != p.count:
            problem = "_count differs from its +Inf bucket"
        elif p.count is None and (p.has_sum or p.has_gsum):
            problem = "has a sum but no count"
        elif p.count is not None and not (p.has_sum or p.has_gsum):
            problem = "has a count but no sum"
        elif p.negative_buckets and p.has_sum:
            problem = "has negative buckets and a _sum"
        elif p.negative_gsum and not p.negative_buckets:
            problem = "has a negative _gsum without negative buckets"
        if problem:
            raise self.fail(f"histogram {name} {problem}", lineno)


def _float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def _value_problem(check: int, v: float) -> str:
    if check == STATESET:
        return "" if v in (0.0, 1.0) else "a stateset value must be 0 or 1"
    if check == INFO:
        return "" if v == 1.0 else "an info value must be 1"
    if check == QUANTILE:
        return "a quantile value cannot be negative" if v < 0 else ""
    if math.isnan(v):
        return "a counter-like value cannot be NaN"
    if check == NOT_NAN:
        return ""
    if v < 0:
        return "a counter-like value cannot be negative"
    if check == COUNT and not v.is_integer():
        return "a bucket or count value must be an integer"
    return ""
