"""Objectives to and from OpenSLO v1: round trips, the spec's shapes, and clear refusals."""

from __future__ import annotations

import re
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from gpusteward.config import load_config, load_config_text
from gpusteward.config.schema import Config
from gpusteward.domain import Scenario
from gpusteward.errors import ConfigError
from gpusteward.indicators import INDICATORS, Judgement
from gpusteward.objectives import objectives
from gpusteward.openslo import export_objectives, import_objectives, to_toml
from service.cli import cli
from tests.sla.builders import DEMO_CONFIG

DATA = Path(__file__).parent / "data" / "openslo"
_DNS_1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_SHORTHAND = re.compile(r"^\d+[mhdwMQY]$")


def _essence(config: Config) -> dict[tuple[Scenario, str], tuple[float, float | None, timedelta | None]]:
    """What judges results: threshold, the target where it applies, and the window."""
    return {
        key: (o.threshold, o.target if INDICATORS[o.indicator].judgement is Judgement.EVENTS else None, o.window)
        for key, o in objectives(config).items()
    }


def _reimported(config: Config, *, configured_only: bool = False) -> Config:
    text = to_toml(import_objectives(export_objectives(config, configured_only=configured_only)))
    return load_config_text(f'timezone = "{config.timezone}"\n' + text)


def _check_against_the_spec(doc: dict[str, Any]) -> None:
    """The rules of the OpenSLO v1 README for an SLO document (the JSON schema leaves them open)."""
    assert doc["apiVersion"] == "openslo/v1"
    assert doc["kind"] == "SLO"
    assert _DNS_1123.match(doc["metadata"]["name"])
    assert len(doc["metadata"]["name"]) <= 63
    spec = doc["spec"]
    assert len(spec["description"]) <= 1050
    assert ("indicator" in spec) != ("indicatorRef" in spec)
    metric = spec["indicator"]["spec"]
    assert ("thresholdMetric" in metric) != ("ratioMetric" in metric)
    if "ratioMetric" in metric:
        ratio = metric["ratioMetric"]
        assert ("good" in ratio) != ("bad" in ratio)
        assert "total" in ratio
    [window] = spec["timeWindow"]
    assert _SHORTHAND.match(window["duration"])
    assert window["isRolling"] is ("calendar" not in window)
    assert spec["budgetingMethod"] in {"Occurrences", "Timeslices", "RatioTimeslices"}
    [goal] = spec["objectives"]
    assert 0.0 <= goal["target"] < 1.0  # [0.0, 1.0): the spec leaves no room for a target of 1
    assert ("op" in goal) == ("value" in goal) == ("thresholdMetric" in metric)
    if "op" in goal:
        assert goal["op"] in {"lte", "gte", "lt", "gt"}
    if spec["budgetingMethod"] == "Timeslices":
        assert 0.0 < goal["timeSliceTarget"] <= 1.0
        assert _SHORTHAND.match(goal["timeSliceWindow"])
    else:
        assert "timeSliceTarget" not in goal


def test_every_objective_of_the_example_config_round_trips() -> None:
    config = load_config(DEMO_CONFIG)
    back = _reimported(config)
    assert _essence(back) == _essence(config)
    assert len(_essence(config)) > 25  # every scenario's defaults, not just the configured ones


def test_exported_documents_follow_the_spec() -> None:
    docs = list(yaml.safe_load_all(export_objectives(load_config(DEMO_CONFIG))))
    for doc in docs:
        _check_against_the_spec(doc)
    windows = {d["spec"]["timeWindow"][0]["calendar"]["timeZone"] for d in docs}
    assert windows == {"Asia/Shanghai"}  # the calendar month is the pool's


@settings(max_examples=40, deadline=None)
@given(
    indicator=st.sampled_from(["queue_wait_p95", "queue_wait_max", "success_rate", "preemption_rate",
                               "gpu_efficiency", "preempted_gpu_hours"]),
    target=st.sampled_from(["", "0.9", "0.99", "0.999", "1.0"]),
    window=st.sampled_from(["", "1d", "7d", "14d", "28d"]),
    threshold=st.sampled_from(["0.25", "0.5", "0.9"]),
)
def test_configured_objectives_round_trip(indicator: str, target: str, window: str, threshold: str) -> None:
    ind = INDICATORS[indicator]
    if target and ind.judgement is not Judgement.EVENTS:
        target = ""  # only percentile indicators take a target (the config refuses it elsewhere)
    if window and ind.digest:
        window = ""
    value = f'"{threshold}h"' if ind.unit.value == "duration" else threshold
    toml = f'[[scenarios.training.slos]]\nindicator = "{indicator}"\nthreshold = {value}\n'
    toml += (f"target = {target}\n" if target else "") + (f'window = "{window}"\n' if window else "")
    config = load_config_text(toml)
    assert _essence(_reimported(config, configured_only=True)) == _essence(config)
    for doc in yaml.safe_load_all(export_objectives(config, configured_only=True)):
        _check_against_the_spec(doc)


def test_samples_derived_from_the_spec_examples_import() -> None:
    found = {
        (o.scenario.value, o.indicator): o
        for name in ("occurrences-queue-wait.yaml", "timeslices-availability.yaml", "indicator-ref.yaml")
        for o in import_objectives((DATA / name).read_text(encoding="utf-8"), source=name)
    }
    wait = found[("evaluation", "queue_wait_p95")]
    assert (wait.threshold, wait.target, wait.window) == (3600.0, 0.9, timedelta(days=14))
    available = found[("online_inference", "availability")]
    assert (available.threshold, available.window) == (0.995, None)
    success = found[("training", "success_rate")]
    assert (success.threshold, success.window) == (0.8, timedelta(days=28))
    config = load_config_text(to_toml(list(found.values())))
    assert objectives(config)[(Scenario.EVALUATION, "queue_wait_p95")].window == timedelta(days=14)


def test_documents_that_cannot_be_judged_are_refused_with_their_reasons() -> None:
    with pytest.raises(ConfigError) as info:
        import_objectives((DATA / "web-shop.yaml").read_text(encoding="utf-8"), source="web-shop.yaml")
    problems = info.value.problems
    assert len(problems) == 2
    assert problems[0].startswith("document 1 (SLO search-slo): its indicator has no metricSource of type GPUSteward")
    assert problems[1].startswith("document 2 (SLO two-objectives): a calendar window of 1Q cannot be judged")


def test_the_cli_exports_and_imports(tmp_path: Path) -> None:
    exported = tmp_path / "slos.yaml"
    runner = CliRunner()
    result = runner.invoke(cli, ["slo", "export", "--config", str(DEMO_CONFIG), "--configured-only",
                                 "--out", str(exported)])
    assert result.exit_code == 0, result.output
    result = runner.invoke(cli, ["slo", "import", str(exported)])
    assert result.exit_code == 0, result.output
    assert '[[scenarios.evaluation.slos]]\nindicator = "queue_wait_p95"\nthreshold = "1h"\n' in result.output
    bad = runner.invoke(cli, ["slo", "import", str(DATA / "web-shop.yaml")])
    assert bad.exit_code != 0
    assert "2 problem(s)" in bad.output
