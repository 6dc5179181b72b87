"""The columnar path for OpenMetrics dumps against the per-line parser it must equal exactly."""

from __future__ import annotations

from collections.abc import Iterable

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.exposition import ExpositionParser
from collectors.exposition_batch import find_runs, plain_rows
from collectors.samples import Samples, SeriesCache
from gpusteward.errors import InputError
from tests.collectors.synthetic import dcgm_dump

Outcome = tuple[str, object]


def _parse(
    lines: list[str], cuts: list[int], *, batch: bool, min_run: int = 2, cache: SeriesCache | None = None
) -> Outcome:
    """("ok", samples and series) or ("error", message with source and line), feeding `lines` in
    batches that end at `cuts`."""
    parser = ExpositionParser("doc", openmetrics=True, cache=cache)
    parser.min_batch = 0 if batch else 1 << 62
    parser.min_run = min_run
    try:
        start = 0
        for end in [*cuts, len(lines)]:
            if end > start:
                parser.feed(lines[start:end])
                start = end
        samples = parser.close()
    except InputError as exc:
        return "error", str(exc)
    return "ok", _facts(samples)


def _facts(samples: Samples) -> tuple[object, ...]:
    # Values as bytes: -0.0 and 0.0 (and NaN payloads) must agree too.
    return (list(samples.series_id), samples.value.tobytes(), list(samples.timestamp_ms), list(samples.series))


_LABELS = ['gpu="0",model="H100 80GB"', 'gpu="1"', 'le="+Inf"', 'quantile="0.5"', 'x="a\\"b"', 'big="}} 1 2"', ""]
_NAMES = {
    "gauge": ("g", ["g"]),
    "counter": ("c", ["c_total", "c_created"]),
    "unknown": ("u", ["u"]),
    "info": ("i", ["i_info"]),
    "stateset": ("s", ["s"]),
    "summary": ("q", ["q", "q_count", "q_sum"]),
    "histogram": ("h", ["h_bucket", "h_count", "h_sum"]),
    "": ("b", ["b", "b_total"]),
}
_VALUES = st.one_of(
    st.sampled_from(["0", "1", "2", "-1", "1.5", "0.1", "1e3", "1E-2", ".5", "5.", "-0", "+3", "1e999"]),
    st.sampled_from(["NaN", "+Inf", "-Inf", "1e", ".", "1_0", "0x1", "", "1 2", '1.5 # {a="b"} 1']),
    st.integers(0, 10**17).map(str),
    st.floats(allow_nan=False, allow_infinity=False).map(repr),
)
_STEPS = st.one_of(st.just(60.0), st.just(0.0), st.sampled_from([-60.0, 0.001, 1e-4, 30.5]))


@st.composite
def documents(draw: st.DrawFn) -> list[str]:
    """OpenMetrics dumps in the shape of real ones (families of series, each a run of samples),
    then broken in places: values and timestamps of every kind, labels with escapes and braces,
    lines lost, repeated, swapped or replaced."""
    lines: list[str] = []
    ts0 = draw(st.sampled_from([1_790_812_855.629, 0.0, -5.5, 9.3e15, 1.7e9]))
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(sorted(_NAMES)))
        family, names = _NAMES[kind]
        if kind:
            lines.append(f"# TYPE {family} {kind}")
        for _ in range(draw(st.integers(1, 3))):
            name = draw(st.sampled_from(names))
            labels = draw(st.sampled_from(_LABELS))
            series = name + (f"{{{labels}}}" if labels or draw(st.booleans()) else "")
            ts = ts0
            timed = draw(st.integers(0, 9)) > 0
            for _ in range(draw(st.integers(1, 12))):
                ts += draw(_STEPS)
                value = draw(_VALUES)
                lines.append(f"{series} {value} {round(ts, 3)}" if timed else f"{series} {value}")
    lines.append("# EOF")
    for _ in range(draw(st.integers(0, 3))):
        at = draw(st.integers(0, len(lines) - 1))
        change = draw(st.sampled_from(["drop", "repeat", "swap", "replace", "space"]))
        if change == "drop":
            del lines[at]
        elif change == "repeat":
            lines.insert(at, lines[at])
        elif change == "swap" and at + 1 < len(lines):
            lines[at], lines[at + 1] = lines[at + 1], lines[at]
        elif change == "replace":
            lines[at] = draw(st.text(st.sampled_from('ab_{}="0123 .e#\\'), max_size=12))
        else:
            lines[at] += " "
    return lines


_SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@_SETTINGS
@given(lines=documents(), cuts=st.lists(st.integers(0, 80), max_size=3), min_run=st.integers(1, 5))
def test_batch_path_equals_the_per_line_path(lines: list[str], cuts: list[int], min_run: int) -> None:
    cuts = sorted(c for c in cuts if c < len(lines))
    expected = _parse(lines, cuts, batch=False)
    assert _parse(lines, cuts, batch=True, min_run=min_run) == expected
    if expected[0] == "ok":  # warm: every series already cached, so the runs are taken whole
        cache = SeriesCache()
        _parse(lines, [], batch=False, cache=cache)
        assert _parse(lines, cuts, batch=True, min_run=min_run, cache=cache)[1] == expected[1]


@settings(max_examples=30, deadline=None)
@given(
    seed=st.integers(0, 1000),
    cut=st.integers(1, 400),
    at=st.integers(0, 2000),
    change=st.sampled_from(["cut", "x", "swap", "drop"]),
)
def test_a_dcgm_dump_with_one_change_reads_the_same(seed: int, cut: int, at: int, change: str) -> None:
    lines = dcgm_dump(2, 2, 40, seed=seed).splitlines()
    at %= len(lines) - 1
    if change == "cut":  # a line cut short anywhere: no timestamp, half a number, half a label
        lines[at] = lines[at][: len(lines[at]) - seed % 40]
    elif change == "x":
        lines[at] += "x"
    elif change == "swap":  # timestamps back, or two series' runs interleaved
        lines[at], lines[at + 1] = lines[at + 1], lines[at]
    else:
        del lines[at]
    cuts = list(range(cut, len(lines), cut))
    assert _parse(lines, cuts, batch=True, min_run=8) == _parse(lines, cuts, batch=False)


def test_a_clean_dump_is_taken_in_bulk_and_matches(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = dcgm_dump(2, 4, 120, seed=3).splitlines()
    per_line = ExpositionParser._feed_om
    seen: list[int] = []

    def counting(parser: ExpositionParser, batch: Iterable[str]) -> None:
        batch = list(batch)
        seen.append(len(batch))
        per_line(parser, batch)

    monkeypatch.setattr(ExpositionParser, "_feed_om", counting)
    result = _parse(lines, [1000, 5000], batch=True, min_run=32)
    monkeypatch.undo()
    assert result == _parse(lines, [1000, 5000], batch=False)
    assert sum(seen) < len(lines) / 20  # metadata, each series' first line, the runs cut by a batch


def test_runs_are_proven_not_guessed() -> None:
    a = [f'a{{g="0"}} {i} {i}' for i in range(8)]
    b = 'a{g="1"} 9 9'
    # A probe that lands on a line of the run cannot hide the other series' line between probes.
    lines = [*a[:3], b, *a[3:]]
    assert find_runs(lines, 2) == [(0, 3, 'a{g="0"} '), (4, 9, 'a{g="0"} ')]
    assert find_runs(lines, 4) == [(4, 9, 'a{g="0"} ')]
    # A comment, or a line with one space (no timestamp), starts no run.
    assert find_runs(["# EOF", "x 1", "x 1 1", "x 2 2"], 1) == [(2, 4, "x ")]


def test_plain_rows_takes_exactly_number_space_number() -> None:
    assert plain_rows(b"1 2\n-3.5e2 4.25", 2)
    for raw in (b"1 2 3", b"1  2", b" 1 2", b"1 2 ", b"1\n2", b"1 2\n\n3 4", b"nan 2", b"1 2\n 3", b"1 \n2"):
        assert not plain_rows(raw, raw.count(b"\n") + 1), raw


def test_timestamps_beyond_int64_and_counter_checks_go_back_to_the_per_line_path() -> None:
    lines = ["# TYPE c counter", *(f"c_total {v} {t}" for v, t in [(1, 1), (2, 2), (3, 9.3e15), (4, 9.3e15)]), "# EOF"]
    assert _parse(lines, [], batch=True, min_run=1) == _parse(lines, [], batch=False)
    lines[3] = "c_total -1 3"
    expected = _parse(lines, [], batch=False)
    assert expected == ("error", "doc:4: a counter-like value cannot be negative")
    assert _parse(lines, [], batch=True, min_run=1) == expected
