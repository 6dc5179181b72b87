"""Every inference server's sample maps to windows: real fixtures where they exist, documented
metric names where the upstream repositories publish no sample (TGI, Envoy AI Gateway)."""

from __future__ import annotations

import re
from pathlib import Path

import polars as pl
import pytest

from collectors.exposition import parse_text
from collectors.files import kind_of
from collectors.inference import WindowState, inference_windows
from collectors.inference_mappings import BUILT_IN, MappingIndex, sample_names

DATA = Path(__file__).resolve().parents[1] / "data" / "metrics"
T1 = 1_790_000_000_000  # two scrapes five minutes apart
T2 = T1 + 300_000
_VALUE = re.compile(r"^([^#\s][^ ]*(?:\{.*\})?) (\S+)$")


def doubled(text: str) -> str:
    """The same exposition with every value doubled: the window between the two is the original."""
    out = []
    for line in text.splitlines():
        m = _VALUE.match(line)
        out.append(f"{m.group(1)} {float(m.group(2)) * 2!r}" if m and m.group(2) not in ("NaN",) else line)
    return "\n".join(out) + "\n"


def windows_of(text: str) -> pl.DataFrame:
    state = WindowState()
    for ts, body in ((T1, text), (T2, doubled(text))):
        samples = parse_text(body, source="fixture", openmetrics=False)
        frame, problems = inference_windows(
            samples, default_cluster="c", source="fixture", state=state, scrape_ts_ms=ts
        )
        assert problems == []
    return frame


def one(frame: pl.DataFrame, service: str) -> dict[str, object]:
    rows = frame.filter(pl.col("service") == service).to_dicts()
    assert len(rows) == 1, frame
    return rows[0]


def test_vllm_fixture_maps() -> None:
    row = one(windows_of((DATA / "datadog-vllm-metrics.txt").read_text()), "facebook/opt-125m")
    assert row["requests"] == 1.0
    assert row["errors"] == 0.0  # vLLM reports errors (abort/error), and there were none
    assert row["e2e_counts"][-1] == 1.0  # type: ignore[index]
    assert row["e2e_le"][-1] == float("inf")  # type: ignore[index]
    assert row["window_s"] == 300


def test_sglang_fixture_maps_with_requests_from_the_histogram_count() -> None:
    text = (DATA / "production-metrics-example.txt").read_text()
    row = one(windows_of(text), "meta-llama/Llama-3.1-8B-Instruct")
    count = float(re.search(r"^sglang:e2e_request_latency_seconds_count\{.*\} (\S+)$", text, re.M).group(1))  # type: ignore[union-attr]
    assert row["requests"] == count
    assert row["errors"] is None  # this SGLang version exposes no error counter: unknown, not 0
    assert row["prompt_tokens"] == 8.128902e06
    assert row["kv_cache_usage"] == pytest.approx(0.56)  # the doubled scrape's gauge, the window's end


def test_triton_fixture_maps_requests_and_failures_per_model() -> None:
    frame = windows_of((DATA / "datadog-triton-metrics-excerpt.txt").read_text())
    row = one(frame, "densenet_onnx")
    assert row["requests"] == 3.0
    assert row["errors"] == 0.0
    assert row["e2e_counts"] is None  # Triton has no end-to-end histogram: no percentile from averages


def test_gateway_inference_extension_fixtures_map() -> None:
    names = [
        "request_total_metric",
        "request_error_total_metric",
        "running_requests_metrics",
        "request_duration_seconds_metric",
        "input_tokens_metric",
    ]
    text = "".join((DATA / f"gaie-{n}.txt").read_text().rstrip("\n") + "\n" for n in names)
    frame = windows_of(text)
    m10 = one(frame, "m10")
    assert (m10["requests"], m10["errors"]) == (3.0, 3.0)
    assert m10["e2e_le"][-1] == float("inf")  # type: ignore[index]  # le="Inf" in this exporter's output
    assert one(frame, "m20")["errors"] == 1.0


TGI = """# TYPE tgi_request_count counter
tgi_request_count 40
# TYPE tgi_request_failure counter
tgi_request_failure{err="overloaded"} 2
# TYPE tgi_request_duration histogram
tgi_request_duration_bucket{le="0.5"} 10
tgi_request_duration_bucket{le="1.5"} 35
tgi_request_duration_bucket{le="+Inf"} 38
tgi_request_duration_sum 30.5
tgi_request_duration_count 38
# TYPE tgi_queue_size gauge
tgi_queue_size 3
"""

ENVOY = """# TYPE gen_ai_server_request_duration_seconds histogram
gen_ai_server_request_duration_seconds_bucket{gen_ai_request_model="m",le="0.64"} 7
gen_ai_server_request_duration_seconds_bucket{gen_ai_request_model="m",le="+Inf"} 9
gen_ai_server_request_duration_seconds_sum{gen_ai_request_model="m"} 4.2
gen_ai_server_request_duration_seconds_count{gen_ai_request_model="m"} 9
gen_ai_server_request_duration_seconds_bucket{gen_ai_request_model="m",error_type="_OTHER",le="0.64"} 1
gen_ai_server_request_duration_seconds_bucket{gen_ai_request_model="m",error_type="_OTHER",le="+Inf"} 1
gen_ai_server_request_duration_seconds_sum{gen_ai_request_model="m",error_type="_OTHER"} 0.1
gen_ai_server_request_duration_seconds_count{gen_ai_request_model="m",error_type="_OTHER"} 1
# TYPE gen_ai_client_token_usage histogram
gen_ai_client_token_usage_sum{gen_ai_request_model="m",gen_ai_token_type="input"} 5000
gen_ai_client_token_usage_sum{gen_ai_request_model="m",gen_ai_token_type="output"} 700
"""


def test_tgi_documented_names_map_to_one_service() -> None:
    row = one(windows_of(TGI), "tgi")
    assert (row["requests"], row["errors"], row["waiting"]) == (40.0, 2.0, 6.0)
    assert row["e2e_counts"] == [10.0, 35.0, 38.0]


def test_envoy_ai_gateway_counts_errors_from_the_error_type_label() -> None:
    row = one(windows_of(ENVOY), "m")
    assert (row["requests"], row["errors"]) == (10.0, 1.0)
    assert (row["prompt_tokens"], row["generation_tokens"]) == (5000.0, 700.0)
    assert row["e2e_counts"] == [8.0, 10.0]


def test_triton_first_response_histogram_is_converted_from_milliseconds() -> None:
    text = """# TYPE nv_inference_first_response_histogram_ms histogram
nv_inference_first_response_histogram_ms_bucket{model="m",version="1",le="100"} 4
nv_inference_first_response_histogram_ms_bucket{model="m",version="1",le="500"} 5
nv_inference_first_response_histogram_ms_bucket{model="m",version="1",le="+Inf"} 5
nv_inference_first_response_histogram_ms_sum{model="m",version="1"} 900
nv_inference_first_response_histogram_ms_count{model="m",version="1"} 5
"""
    row = one(windows_of(text), "m")
    assert row["ttft_le"] == [0.1, 0.5, float("inf")]
    assert row["ttft_sum"] == pytest.approx(0.9)


@pytest.mark.parametrize("mapping", BUILT_IN, ids=lambda m: m.server)
def test_every_mapping_is_detected_as_an_inference_file(mapping: object) -> None:
    index = MappingIndex()
    for name in sample_names(mapping):  # type: ignore[arg-type]
        assert index.knows(name)
        assert kind_of(f"{name} 1\n") == "inference"
