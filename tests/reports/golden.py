"""Golden files: compare rendered output exactly; `UPDATE_GOLDEN=1 pytest tests/reports` rewrites them."""

from __future__ import annotations

import difflib
import os
from pathlib import Path

GOLDEN_DIR = Path(__file__).parent / "golden"


def assert_golden(name: str, actual: str) -> None:
    path = GOLDEN_DIR / name
    if os.environ.get("UPDATE_GOLDEN") == "1":
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(actual, encoding="utf-8")
        return
    assert path.exists(), f"{path} is missing; run UPDATE_GOLDEN=1 pytest tests/reports to create it"
    expected = path.read_text(encoding="utf-8")
    if actual != expected:
        diff = "".join(
            difflib.unified_diff(
                expected.splitlines(keepends=True), actual.splitlines(keepends=True), str(path), "rendered"
            )
        )
        raise AssertionError(f"{name} differs from the golden file (UPDATE_GOLDEN=1 rewrites it):\n{diff}")
