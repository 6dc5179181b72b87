"""Real components in tests: when CI=true a missing one fails the test; elsewhere it skips."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

IN_CI = os.environ.get("CI", "").lower() == "true"


def missing(what: str, how: str) -> None:
    """Fail in CI, skip elsewhere, saying how to get the component."""
    message = f"{what} is not installed ({how})"
    if IN_CI:
        pytest.fail(message)
    pytest.skip(message)


def require_binary(name: str, *, package: str, extra_paths: tuple[str, ...] = ()) -> str:
    """The path of an executable from a Debian package; see .ci/packages.d/ for what CI installs."""
    found = shutil.which(name)
    if found:
        return found
    for folder in extra_paths:
        candidate = Path(folder) / name
        if candidate.exists():
            return str(candidate)
    missing(name, f"apt-get install {package}; ./dev test installs it from .ci/packages.d/")
    raise AssertionError("unreachable")


def stop(process: subprocess.Popen[Any], timeout_s: float = 15) -> None:
    """Terminate a component started for a test; kill it when it does not stop within `timeout_s`."""
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout_s)
