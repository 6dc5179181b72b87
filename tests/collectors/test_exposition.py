"""The exposition parser against real outputs, prometheus_client's reading of them, and properties."""

from __future__ import annotations

import contextlib
import math
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from collectors.exposition import ExpositionParser, parse_lines, parse_text
from collectors.labels import escape
from collectors.numbers import format_value
from collectors.samples import Samples, SeriesCache
from gpusteward.errors import InputError
from tests.collectors.dcgm_scrape import scrape
from tests.collectors.reference import our_rows, reference_rows

DATA = Path(__file__).parents[1] / "data" / "metrics"
TEXT_FIXTURES = [
    "datadog-dcgm-metrics.txt",
    "datadog-vllm-metrics.txt",
    "production-metrics-example.txt",
    "datadog-triton-metrics-excerpt.txt",
    "gaie-request_duration_seconds_metric.txt",
    "alltypes.237mfs.prom.txt",
]
OM_FIXTURES = ["1histogram.om.txt", "dump-openmetrics-test.prom", "dump-openmetrics-roundtrip-test.prom"]


def _rows(samples: Samples) -> list[tuple[str, tuple[tuple[str, str], ...], float | str, int | None]]:
    return [(s.name, s.labels, "NaN" if math.isnan(v) else v, t) for s, v, t in samples.rows()]


@pytest.mark.parametrize("name", TEXT_FIXTURES)
def test_text_fixtures_read_as_prometheus_client_reads_them(name: str) -> None:
    text = (DATA / name).read_text()
    assert our_rows(parse_text(text, openmetrics=False), openmetrics=False) == reference_rows(text, openmetrics=False)


@pytest.mark.parametrize("name", OM_FIXTURES)
def test_openmetrics_fixtures_read_as_prometheus_client_reads_them(name: str) -> None:
    text = (DATA / name).read_text()
    assert our_rows(parse_text(text, openmetrics=True), openmetrics=True) == reference_rows(text, openmetrics=True)


def test_dcgm_scrape_reads_as_prometheus_client_reads_it() -> None:
    text = scrape(12)
    samples = parse_text(text, openmetrics=False)
    assert len(samples) == 12 * 8 * 20
    assert our_rows(samples, openmetrics=False) == reference_rows(text, openmetrics=False)


def test_dcgm_counters_keep_their_exposed_names() -> None:
    samples = parse_text((DATA / "datadog-dcgm-metrics.txt").read_text(), openmetrics=False)
    energy = [s for s in samples.series if s.name == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"]
    assert len(energy) == 1
    assert energy[0].type == "counter"
    assert energy[0].family == "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION"
    assert energy[0].label("Hostname") == "424773df46e0"
    rows = {(s.name, s.label("gpu")): v for s, v, _ in samples.rows() if s.label("modelName") == "Tesla T4"}
    assert rows["DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "0"] == 128996013
    assert rows["DCGM_FI_DEV_POWER_USAGE", "0"] == 8.969


def test_prometheus_docs_example() -> None:
    text = (DATA / "exposition-formats-example.txt").read_text()
    # The docs' example has a line without a value; it is reported with its line number.
    with pytest.raises(InputError, match=r"^docs:10: missing value"):
        parse_text(text, source="docs", openmetrics=False)
    fixed = text.replace('"error.message"="Not Found"}', '"error.message"="Not Found"} 7')
    rows: dict[tuple[str, tuple[tuple[str, str], ...]], tuple[float, int | None, str]] = {
        (s.name, s.labels): (v, t, s.type) for s, v, t in parse_text(fixed, openmetrics=False).rows()
    }
    assert rows["http_requests_total", (("method", "post"), ("code", "400"))] == (3.0, 1395066363000, "counter")
    path = ("path", "C:\\DIR\\FILE.TXT")
    error = ("error", 'Cannot find file:\n"FILE.TXT"')
    assert rows["msdos_file_access_time_seconds", (path, error)] == (1.458255915e9, None, "untyped")
    assert rows["my.dotted.metric", (("error.message", "Not Found"),)] == (7.0, None, "untyped")
    assert rows["something_weird", (("problem", "division by zero"),)] == (math.inf, -3982045, "untyped")
    assert rows["metric_without_timestamp_and_labels", ()] == (12.47, None, "untyped")
    assert rows["http_request_duration_seconds_bucket", (("le", "+Inf"),)] == (144320.0, None, "histogram")
    assert rows["rpc_duration_seconds", (("quantile", "0.99"),)] == (76656.0, None, "summary")
    assert rows["rpc_duration_seconds_count", ()] == (2693.0, None, "summary")


def test_openmetrics_seconds_become_milliseconds() -> None:
    samples = parse_text((DATA / "dump-openmetrics-roundtrip-test.prom").read_text(), openmetrics=True)
    first = next(samples.rows())
    assert first[0].name == "my_histogram_bucket"
    assert first[0].label("le") == "+Inf"
    assert first[1:] == (1.0267820369e10, 1700215884373)


def test_text_format_accepts_inf_spellings_in_le_openmetrics_only_plus_inf() -> None:
    gaie = parse_text((DATA / "gaie-request_duration_seconds_metric.txt").read_text(), openmetrics=False)
    les = {s.label("le") for s in gaie.series if s.name.endswith("_bucket")}
    assert {"Inf", "+Inf"} <= les
    bad = '# TYPE a histogram\na_bucket{le="Inf"} 1\na_count 1\na_sum 1\n# EOF\n'
    with pytest.raises(InputError, match="le label 'Inf'"):
        parse_text(bad, openmetrics=True)


def test_histograms_in_any_line_order() -> None:
    sglang = parse_text((DATA / "production-metrics-example.txt").read_text(), openmetrics=False)
    ttft = [s for s in sglang.series if s.family == "sglang:time_to_first_token_seconds"]
    assert {s.name.rsplit("_", 1)[1] for s in ttft} == {"sum", "bucket", "count"}
    assert all(s.type == "histogram" for s in ttft)


def test_comments_and_unlabelled_series() -> None:
    text = "# NOTE anything at all\n# HELP a some help\n# TYPE a gauge\na 1\n\n  \nb{} 2\n"
    rows = [(s.name, s.type, v) for s, v, _ in parse_text(text, openmetrics=False).rows()]
    assert rows == [("a", "gauge", 1.0), ("b", "untyped", 2.0)]


def test_truncated_openmetrics_names_the_line() -> None:
    with pytest.raises(InputError, match=r"^f:3: no '# EOF'"):
        parse_text("a 1 1\na 2 2\n", source="f", openmetrics=True)
    with pytest.raises(InputError, match=r"^f:3: text after '# EOF'"):
        parse_text("a 1\n# EOF\nb 2\n", source="f", openmetrics=True)


def test_timestamps_out_of_order_in_a_dump_are_errors() -> None:
    with pytest.raises(InputError, match=r"^f:2: timestamp goes backwards"):
        parse_text("a 1 60\na 1 0\n# EOF\n", source="f", openmetrics=True)


def test_bare_families_may_interleave_like_a_promtool_dump() -> None:
    text = 'a{g="0"} 1 0\nb{g="0"} 2 0\na{g="1"} 3 0\na{g="0"} 4 60\n# EOF\n'
    assert [(s.name, v, t) for s, v, t in parse_text(text, openmetrics=True).rows()] == [
        ("a", 1, 0),
        ("b", 2, 0),
        ("a", 3, 0),
        ("a", 4, 60000),
    ]
    with pytest.raises(InputError, match=r"^f:4: timestamp goes backwards"):
        parse_text(text.replace("4 60", "4 -60"), source="f", openmetrics=True)


def test_typed_families_must_not_interleave() -> None:
    text = "# TYPE a gauge\na 1\n# TYPE b gauge\nb 1\n# TYPE a gauge\na 2\n# EOF\n"
    with pytest.raises(InputError, match="clashes"):
        parse_text(text, openmetrics=True)


def test_warm_cache_gives_the_same_rows_and_series_ids() -> None:
    cache = SeriesCache()
    first = parse_text(scrape(3, seed=1), openmetrics=False, cache=cache)
    n_series = len(cache.series)
    second = parse_text(scrape(3, seed=2), openmetrics=False, cache=cache)
    assert len(cache.series) == n_series
    assert list(second.series_id) == list(first.series_id)
    assert _rows(second) == _rows(parse_text(scrape(3, seed=2), openmetrics=False))


def test_streaming_in_any_batches_and_take() -> None:
    text = (DATA / "dump-openmetrics-roundtrip-test.prom").read_text() + ""
    lines = text.split("\n")[:-1]
    whole = _rows(parse_text(text, openmetrics=True))
    rng = random.Random(3)
    for _ in range(5):
        parser = ExpositionParser("x", openmetrics=True)
        parts: list[Samples] = []
        i = 0
        while i < len(lines):
            j = i + rng.randint(1, 4)
            parser.feed(lines[i:j])
            parts.append(parser.take())
            i = j
        parts.append(parser.close())
        joined = parts[0]
        for part in parts[1:]:
            joined.extend(part)
        assert _rows(joined) == whole
    with_newlines = parse_lines((line + "\n" for line in lines), openmetrics=True)
    assert _rows(with_newlines) == whole


def test_frame_has_nulls_for_missing_timestamps() -> None:
    frame = parse_text("a 1\na 2 1000\n", openmetrics=False).frame()
    assert frame["ts_ms"].to_list() == [None, 1000]


# -- properties -------------------------------------------------------------------------------
_names = st.sampled_from(["a", "b_total", "vllm:x_seconds", "DCGM_FI_DEV_GPU_UTIL", "c_bucket", "_x:y"])
_label_names = st.sampled_from(["le", "model_name", "gpu", "Hostname", "a_b"])
_values = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(-(10**6), 10**6).map(float),
)
_label_values = st.text(st.characters(codec="utf-8"), max_size=12)
_series = st.tuples(_names, st.dictionaries(_label_names, _label_values, max_size=3))


@st.composite
def documents(draw: st.DrawFn) -> list[tuple[str, tuple[tuple[str, str], ...], float, int | None]]:
    """Samples of distinct series; each series has one or more samples at increasing times."""
    series = draw(st.lists(_series, max_size=8, unique_by=lambda s: (s[0], tuple(sorted(s[1].items())))))
    out = []
    for name, labels in series:
        n = draw(st.integers(1, 3))
        timed = draw(st.booleans())
        start = draw(st.integers(-(10**12), 10**12))
        for k in range(n if timed else 1):
            out.append((name, tuple(labels.items()), draw(_values), start + 1000 * k if timed else None))
    return out


def _render(rows: list[tuple[str, tuple[tuple[str, str], ...], float, int | None]], *, openmetrics: bool) -> str:
    lines = []
    for name, labels, value, ts in rows:
        body = name + ("{" + ",".join(f'{k}="{escape(v)}"' for k, v in labels) + "}" if labels else "")
        line = f"{body} {format_value(value)}"
        if ts is not None:
            sign = "-" if ts < 0 else ""
            line += f" {sign}{abs(ts) // 1000}.{abs(ts) % 1000:03d}" if openmetrics else f" {ts}"
        lines.append(line + "\n")
    return "".join(lines) + ("# EOF\n" if openmetrics else "")


def _expected(rows: list[tuple[str, tuple[tuple[str, str], ...], float, int | None]]) -> list[object]:
    return [(n, lab, "NaN" if math.isnan(v) else v, t) for n, lab, v, t in rows]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(documents(), st.booleans())
def test_render_then_parse_gives_the_same_rows(
    rows: list[tuple[str, tuple[tuple[str, str], ...], float, int | None]], openmetrics: bool
) -> None:
    text = _render(rows, openmetrics=openmetrics)
    cache = SeriesCache()
    assert _rows(parse_text(text, openmetrics=openmetrics, cache=cache)) == _expected(rows)
    assert _rows(parse_text(text, openmetrics=openmetrics, cache=cache)) == _expected(rows)  # warm


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200), st.booleans())
def test_random_bytes_raise_only_input_errors(data: bytes, openmetrics: bool) -> None:
    text = data.decode("utf-8", errors="replace")
    with contextlib.suppress(InputError):
        parse_text(text, openmetrics=openmetrics)


_VALID = (DATA / "dump-openmetrics-roundtrip-test.prom").read_text() + 'x{a="1",b="\\"}"} 1 2 # {t="1"} 3\n'


@settings(max_examples=300, deadline=None)
@given(st.integers(0, len(_VALID)), st.integers(0, 4), st.text(max_size=3), st.booleans())
def test_mutated_documents_raise_only_input_errors(at: int, cut: int, insert: str, openmetrics: bool) -> None:
    text = _VALID[:at] + insert + _VALID[at + cut :]
    cache = SeriesCache()
    for _ in range(2):  # cold, then warm: the fast path must agree with the full parser
        with contextlib.suppress(InputError):
            parse_text(text, openmetrics=openmetrics, cache=cache)


def test_client_golang_output_that_breaks_the_spec_is_rejected() -> None:
    text = (DATA / "alltypes.5mfs.om.txt").read_text()
    with pytest.raises(InputError, match=r"^om:33: a counter-like value cannot be negative"):
        parse_text(text, source="om", openmetrics=True)  # a _sum next to negative buckets
