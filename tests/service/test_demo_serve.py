"""`gpusteward demo --serve` starts the service and the dashboard on loopback, prints both URLs,
answers on them, and stops cleanly on Ctrl-C."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

pytestmark = pytest.mark.slow  # minutes: scheduled first (tests/parallel.py)

URLS = re.compile(r"dashboard: (http://127\.0\.0\.1:\d+/)\s+service: (http://127\.0\.0\.1:\d+)/metrics")
STARTUP_LINES = 400  # the demo's own summary comes first


def test_demo_serve_prints_working_urls_and_stops(tmp_path: Path) -> None:
    command = [sys.executable, "-c", "from service.cli import main; main()",
               # The smallest fleet (a node per cluster) for a day, its review in Markdown only (two PDFs took a
               # third of the test): the test is about --serve, not the month or the rendering.
               "demo", "--out", str(tmp_path / "demo"), "--days", "1", "--nodes", "2", "--format", "md", "--serve"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert process.stdout is not None
    try:
        found = None
        seen: list[str] = []
        for _ in range(STARTUP_LINES):
            line = process.stdout.readline()
            if not line:
                break
            seen.append(line)
            found = URLS.search(line)
            if found:
                break
        assert found, "".join(seen[-30:])
        dashboard, service = found.groups()
        assert httpx.get(f"{service}/healthz", timeout=10).text.strip() == "ok"
        assert "gpusteward_job_runs_total" in httpx.get(f"{service}/metrics", timeout=10).text
        assert httpx.get(f"{dashboard}_stcore/health", timeout=10).text == "ok"
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
        process.stdout.close()
    assert process.returncode is not None
    time.sleep(0.5)
    try:
        httpx.get(f"{service}/healthz", timeout=2)
        still_up = True
    except httpx.TransportError:
        still_up = False
    assert not still_up, "the service must stop with the demo"


def test_an_unknown_review_format_is_refused_before_anything_runs(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from service.cli import cli

    result = CliRunner().invoke(cli, ["demo", "--out", str(tmp_path / "demo"), "--format", "md,docx"])
    assert result.exit_code == 2, result.output
    assert "docx: expected some of md, html, pdf" in result.output
    assert not (tmp_path / "demo").exists()


def test_report_refuses_an_unknown_format_with_the_same_message(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from gpusteward.config import example_config_path
    from service.cli import cli

    result = CliRunner().invoke(cli, ["report", "--config", str(example_config_path()), "--db",
                                      str(tmp_path / "w.duckdb"), "--format", "pdf,docx", "--out", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert "docx: expected some of md, html, pdf" in result.output
    assert not (tmp_path / "w.duckdb").exists()
