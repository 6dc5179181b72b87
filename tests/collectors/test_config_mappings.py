"""A server no built-in knows, mapped in the config alone, reads into inference windows."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from collectors.files import detect_kind, read_file
from collectors.inference import WindowState
from collectors.inference_mappings import BUILT_IN, DEFAULT_INDEX, VLLM, Selector, mapping_index
from gpusteward.config.inference import parse_selector
from gpusteward.config.loader import load_config_text
from gpusteward.errors import ConfigError
from service.importer import import_files
from tests.simulated import SIMULATED
from warehouse import open_warehouse

FIXTURE = Path(__file__).parents[1] / "data" / "inference" / "acme-llm-two-scrapes.prom"

ACME = """
[[inference.mappings]]
server = "acme-llm"
service_labels = ["deployment"]
e2e = ["acme_request_latency_ms"]
latency_scale = 0.001
requests = ['acme_requests{outcome=~"ok|failed"}']
errors = ['acme_requests{outcome="failed"}']
prompt_tokens = ["acme_tokens_in"]
running = ["acme_inflight"]
"""


def test_a_config_mapping_reads_an_invented_server_into_windows() -> None:
    config = load_config_text(ACME)
    index = mapping_index(config)
    assert detect_kind(FIXTURE) is None  # the built-ins alone do not know it
    assert detect_kind(FIXTURE, mappings=index) == "inference"
    batch = read_file(FIXTURE, inference_state=WindowState(), default_cluster="lab", mappings=index)
    frame = batch.frames["inference_windows"]
    assert batch.problems == []
    assert frame.height == 1
    row = frame.row(0, named=True)
    assert (row["cluster"], row["service"], row["window_s"]) == ("lab", "chat-7b", 300)
    assert row["requests"] == 30.0  # ok +25, failed +5; cancelled is not selected
    assert row["errors"] == 5.0
    assert row["e2e_le"] == [0.1, 0.5, float("inf")]  # milliseconds scaled to seconds
    assert row["e2e_counts"] == [5.0, 20.0, 30.0]
    assert row["e2e_sum"] == pytest.approx(18.0)
    assert row["prompt_tokens"] == 5000.0
    assert row["running"] == 6.0
    assert row["generation_tokens"] is None


def test_the_importer_uses_the_configs_mappings(tmp_path: Path) -> None:
    data = tmp_path / "in"
    data.mkdir()
    shutil.copy(FIXTURE, data / FIXTURE.name)
    config = load_config_text(ACME)
    with open_warehouse(str(tmp_path / "wh.duckdb")) as wh:
        summary = import_files(wh, [data], config=config, ignore=SIMULATED)
    assert summary.errors == []
    assert summary.rows_stored == {"inference_windows": 1}


def test_the_index_keeps_the_built_ins_and_lets_a_mapping_replace_one() -> None:
    assert mapping_index(None) is DEFAULT_INDEX
    assert mapping_index(load_config_text("")) is DEFAULT_INDEX
    index = mapping_index(load_config_text(ACME))
    assert [m.server for m in index.mappings] == [*(m.server for m in BUILT_IN), "acme-llm"]
    replaced = mapping_index(
        load_config_text(
            """
[[inference.mappings]]
server = "vllm"
service_labels = ["model_name"]
e2e = ["vllm:e2e_request_latency_seconds_v2"]
"""
        )
    )
    assert VLLM not in replaced.mappings
    assert replaced.knows("vllm:e2e_request_latency_seconds_v2_bucket")
    assert not replaced.knows("vllm:request_success_total")
    acme = index.mappings[-1]
    assert acme.errors == (Selector("acme_requests", {"outcome": frozenset({"failed"})}),)


def test_selectors_parse_as_promql_writes_them() -> None:
    s = parse_selector('x_total{a="1", b=~"p|q",c!=""}')
    assert (s.name, s.labels, s.present) == (
        "x_total",
        {"a": frozenset({"1"}), "b": frozenset({"p", "q"})},
        frozenset({"c"}),
    )
    assert parse_selector("vllm:x").labels == {}
    for bad in ("x{a=1}", 'x{a=~"p.*"}', 'x{a!="v"}', 'x{a="1"', '{a="1"}', 'x{a="1",a="2"}'):
        with pytest.raises(ValueError, match=r"^'"):
            parse_selector(bad)


def test_bad_mappings_are_config_errors_naming_the_field() -> None:
    text = """
[[inference.mappings]]
server = "a"
requests = ['a_total{x=~"p.+"}']
latency_scale = 0

[[inference.mappings]]
server = "a"
service_labels = ["m"]
running = ["not a name"]
"""
    with pytest.raises(ConfigError) as info:
        load_config_text(text)
    problems = "\n".join(info.value.problems)
    assert "inference.mappings[0].service_labels: name at least one service label" in problems
    assert "inference.mappings[0].latency_scale: expected a positive number" in problems
    assert "inference.mappings[0].requests[0]:" in problems
    assert "inference.mappings[1].server: duplicate mapping for server 'a'" in problems
    assert "inference.mappings[1]: maps no latency histogram" in problems
    assert "inference.mappings[1].running[0]: 'not a name' is not a metric name" in problems
