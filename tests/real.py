"""Real components in tests: when CI=true a missing one fails the test; elsewhere it skips."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import time
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


SPARK_INSTALL = "GPUSTEWARD_SPARK_INSTALL"
"""Set by `./dev test`, which installs the spark extra beside the tests: the file its install writes on ending
(its exit status and when), with the install's output beside it in FILE.log."""


def wait_for_spark_install(timeout_s: float = 1200, poll_s: float = 1) -> None:
    """When `./dev test` is installing the spark extra, wait for it to end; fail if it failed or hangs."""
    status = os.environ.get(SPARK_INSTALL)
    if not status:
        return
    deadline = time.monotonic() + timeout_s
    while not Path(status).exists():
        if time.monotonic() > deadline:
            pytest.fail(f"the spark extra's install did not end within {timeout_s:.0f} s (output: {status}.log)")
        time.sleep(poll_s)
    exit_status = Path(status).read_text().split()[0]
    if exit_status != "0":
        log = Path(f"{status}.log")
        said = log.read_text(errors="replace")[-3000:] if log.exists() else "(no output)"
        pytest.fail(f"installing the spark extra failed (exit {exit_status}):\n{said}")


def require_pyspark() -> None:
    """pyspark, once `./dev test`'s install of the spark extra (when one is under way) has ended."""
    wait_for_spark_install()
    if importlib.util.find_spec("pyspark") is None:
        missing("pyspark", "the spark extra: uv pip install -e '.[spark]'; ./dev setup installs it")


def stop(process: subprocess.Popen[Any], timeout_s: float = 15) -> None:
    """Terminate a component started for a test; kill it when it does not stop within `timeout_s`."""
    process.terminate()
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout_s)
