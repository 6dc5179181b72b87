"""Every metric the service exports is in the catalogue of docs/service.md, and nothing else is."""

from __future__ import annotations

import re
from pathlib import Path

from service.metrics import ServiceMetrics

DOC = Path(__file__).parents[2] / "docs" / "service.md"


def _documented() -> dict[str, str]:
    text = DOC.read_text(encoding="utf-8").split("## Metrics", 1)[1].split("\n## ", 1)[0]
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| `(gpusteward_\w+)` \| (\w+) \|", text, re.M)}


def _exported() -> dict[str, str]:
    metrics = ServiceMetrics()
    out = {}
    for family in metrics.registry.collect():
        name = family.name + "_total" if family.type == "counter" else family.name
        out[name] = family.type
    for family in [*metrics.results.describe(), *metrics.scrapes.describe()]:
        out[family.name + ("_total" if family.type == "counter" else "")] = family.type
    return out


def test_the_metric_catalogue_matches_the_registry() -> None:
    assert _documented() == _exported()


def test_each_service_has_its_own_registry() -> None:
    from prometheus_client import REGISTRY

    first, second = ServiceMetrics(), ServiceMetrics()
    assert first.registry is not second.registry
    assert "gpusteward_job_runs" not in REGISTRY._names_to_collectors  # never the global default
