"""The suite's rules: under CI=true every skip is a failure; elsewhere each skip is logged for ./dev test."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.real import IN_CI

SKIP_LOG = "GPUSTEWARD_SKIP_LOG"
"""Where each skip is appended as one `test: reason` line (./dev test sets it and prints the list last)."""


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    if isinstance(longrepr, tuple):  # (file, line, "Skipped: why")
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _record_skip(report: pytest.TestReport | pytest.CollectReport) -> None:
    reason = " ".join(_reason(report).split())
    if IN_CI:
        # A skip in CI hides what it skipped: a missing component, a tmpfs that did not mount.
        report.outcome = "failed"
        report.longrepr = f"skipped under CI=true, where every skip is a failure: {reason}"
        return
    if log := os.environ.get(SKIP_LOG):
        with Path(log).open("a", encoding="utf-8") as out:
            out.write(f"{report.nodeid}: {reason}\n")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped and not hasattr(report, "wasxfail"):
        _record_skip(report)


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome = yield
    report: pytest.CollectReport = outcome.get_result()  # type: ignore[attr-defined]
    if report.skipped:
        _record_skip(report)
