from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpusteward.config import example_config_path, load_config, load_config_text
from gpusteward.domain import Scenario
from gpusteward.errors import ConfigError

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "gpusteward.toml"


def problems_of(text: str) -> list[str]:
    with pytest.raises(ConfigError) as info:
        load_config_text(text, source="test.toml")
    return info.value.problems


def test_example_config_loads_and_is_the_packaged_default() -> None:
    config = load_config(EXAMPLE)
    assert EXAMPLE.read_text() == Path(example_config_path()).read_text()
    assert [c.name for c in config.clusters] == ["east", "west"]
    assert set(config.teams) == {"nlp", "vision", "speech", "research", "platform"}
    p99 = config.scenarios[Scenario.ONLINE_INFERENCE].slos[0]
    assert (p99.indicator, p99.threshold) == ("latency_p99", 8.0)
    assert config.protection.inference_reserve[0].for_ == timedelta(minutes=10)


def test_three_mistakes_are_all_named_with_their_paths() -> None:
    problems = problems_of(
        """
        [warehouse]
        pth = "x.duckdb"
        [teams.vision]
        entitled_share = "big"
        [[scenarios.online_inference.slos]]
        indicator = "latency_p99"
        threshold = "2s"
        [[scenarios.online_inference.slos]]
        indicator = "latency_p95"
        threshold = "fast"
        """
    )
    assert problems == [
        "warehouse.pth: unknown field (did you mean 'path'?)",
        'teams.vision.entitled_share: expected a number, got "big"',
        'scenarios.online_inference.slos[1].threshold: expected a duration, got "fast"',
    ]


def test_semantic_problems_are_listed_together() -> None:
    problems = problems_of(
        """
        [[clusters]]
        name = "a"
        timezone = "Mars/Olympus"
        [teams.x]
        entitled_share = 0.8
        [teams.y]
        entitled_share = 0.5
        [[rules]]
        scenario = "training"
        team = "ghost"
        [[scenarios.training.slos]]
        indicator = "latency_p99"
        threshold = "1s"
        [[protection.inference_reserve]]
        cluster = "b"
        min_gpus = 4
        """
    )
    assert "clusters[0].timezone: unknown time zone 'Mars/Olympus'" in problems
    assert "teams: entitled shares add up to 1.30, more than the whole pool (1.0)" in problems
    assert "rules[0].team: unknown team 'ghost'" in problems
    assert "scenarios.training.slos[0].indicator: 'latency_p99' does not apply to scenario 'training'" in problems
    assert "protection.inference_reserve[0].cluster: unknown cluster 'b'" in problems


def test_wrong_types_and_missing_fields() -> None:
    problems = problems_of(
        """
        clusters = "east"
        [[rules]]
        match = { partition = "x" }
        [reports]
        languages = ["en", "fr"]
        [quota]
        max_step = true
        """
    )
    assert 'clusters: expected a list, got "east"' in problems
    assert "rules[0].scenario: required field is missing" in problems
    assert "reports.languages[1]: expected one of 'en', 'zh', got \"fr\"" in problems
    assert "quota.max_step: expected a number, got True" in problems


def test_unknown_scenario_key_and_bad_toml() -> None:
    assert problems_of("[scenarios.trainig]\n") == [
        "scenarios: expected one of 'training', 'fine_tuning', 'evaluation', 'online_inference', "
        "'batch_inference', 'interactive', 'general_compute', got \"trainig\""
    ]
    assert problems_of("this is = = not toml")[0].startswith("not valid TOML")


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the file"):
        load_config(tmp_path / "nope.toml")


def test_paths_resolve_against_the_config_folder(tmp_path: Path) -> None:
    path = tmp_path / "c.toml"
    path.write_text('[warehouse]\npath = "data/w.duckdb"\n')
    assert load_config(path).resolve("data/w.duckdb") == str(tmp_path / "data" / "w.duckdb")


@given(
    st.recursive(
        st.none() | st.booleans() | st.integers() | st.text(max_size=5),
        lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3),
        max_leaves=8,
    )
)
def test_any_value_in_any_field_gives_problems_not_crashes(value: object) -> None:
    import tomllib  # noqa: F401 - the loader's own parser is bypassed: build from the value directly

    from gpusteward.config.loader import _build
    from gpusteward.config.schema import Config

    problems: list[str] = []
    _build(Config, {"clusters": value, "teams": value, "warehouse": value}, "", problems)
    assert all(isinstance(p, str) and ":" in p for p in problems)


def test_limits_are_read_and_a_bound_that_refuses_everything_is_a_problem() -> None:
    config = load_config_text('[limits]\nmax_line_length = 1000\nmax_sample_ahead = "2h"\n', source="x.toml")
    assert (config.limits.max_line_length, config.limits.max_sample_ahead) == (1000, timedelta(hours=2))
    with pytest.raises(ConfigError) as caught:
        load_config_text("[limits]\nmax_line_length = 0\nmax_compression_ratio = 0.5\n", source="x.toml")
    assert caught.value.problems == [
        "limits.max_line_length: expected a positive value, got 0",
        "limits.max_compression_ratio: expected at least 1 (gzip never shrinks text below it)",
    ]
