"""Golden files: compare rendered output exactly; `UPDATE_GOLDEN=1 pytest tests/reports` rewrites them.

A rewrite prints its diff, so whoever regenerates reads what changed before committing it; under
CI=true a rewrite is refused, so a golden can never be made to agree with the output it checks.
"""

from __future__ import annotations

import difflib
import os
import sys
from pathlib import Path

from tests.real import IN_CI

GOLDEN_DIR = Path(__file__).parent / "golden"


def _diff(expected: str, actual: str, path: Path) -> str:
    lines = difflib.unified_diff(
        expected.splitlines(keepends=True), actual.splitlines(keepends=True), str(path), "rendered"
    )
    return "".join(lines)


def assert_golden(name: str, actual: str, *, golden_dir: Path = GOLDEN_DIR) -> None:
    path = golden_dir / name
    expected = path.read_text(encoding="utf-8") if path.exists() else ""
    if os.environ.get("UPDATE_GOLDEN") == "1":
        if IN_CI:
            raise AssertionError("UPDATE_GOLDEN=1 is refused under CI=true: regenerate goldens locally, commit them")
        if actual != expected:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(actual, encoding="utf-8")
            sys.stderr.write(f"rewrote {path}:\n{_diff(expected, actual, path)}")
        return
    assert path.exists(), f"{path} is missing; run UPDATE_GOLDEN=1 pytest tests/reports to create it"
    if actual != expected:
        diff = _diff(expected, actual, path)
        raise AssertionError(f"{name} differs from the golden file (UPDATE_GOLDEN=1 rewrites it):\n{diff}")
