"""Golden cases for the protection lines: `tests/sla/golden_protection/<case>.json`, in the shape
tests/sla/golden.py describes, where `run` names a line of `default_lines()` and the expected rows
are its BREACH_EPISODES rows in order."""

from __future__ import annotations

from pathlib import Path

import pytest

from sla.protection import default_lines
from tests.sla.golden import load_case, mismatches

CASES = sorted((Path(__file__).parent / "golden_protection").glob("*.json"))


def test_there_are_golden_protection_cases() -> None:
    assert len(CASES) >= 3


@pytest.mark.parametrize("path", CASES, ids=lambda p: p.stem)
def test_golden_protection_case(path: Path) -> None:
    case = load_case(path)
    line = next(line for line in default_lines() if line.name == case.run)
    out = line.episodes(case.inputs, case.config)
    assert out.height == len(case.expected)
    assert mismatches(case, out) == []
