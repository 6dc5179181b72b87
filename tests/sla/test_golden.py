"""Every golden case in tests/sla/golden/ gives its expected rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sla.golden import cases, load_case, mismatches, run_case


def test_every_built_in_evaluator_has_a_golden_case() -> None:
    from sla.evaluator import default_registry

    covered = {load_case(p).run for p in cases()}
    assert set(default_registry().names()) <= covered | {"queues"}
    assert {"ledger", "idle_by_gpu"} <= covered


@pytest.mark.parametrize("path", cases(), ids=lambda p: p.stem)
def test_golden_case(path: Path) -> None:
    case = load_case(path)
    assert mismatches(case, run_case(case)) == []
