"""The suite's own rules: no test reads the wall clock to choose its data, a skip fails under CI,
and golden files cannot be rewritten under CI."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reports import golden

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent

WALL_CLOCK = re.compile(r"\b(?:date\.today|datetime\.(?:now|utcnow|today)|time\.time)\(")
"""Calls that read today's date or the wall clock; time.monotonic and perf_counter measure durations and may stay."""

READS_THE_REAL_CLOCK = {
    "tests/realslurm/test_slurm_real.py": "a real slurmctld stamps jobs with the real clock, which the window holds",
    "tests/realslurm/test_slurm_nested.py": "the same, on the nested-accounts layout",
    "tests/realslurm/cluster.py": "notes when the real cluster started, where the tests' sacct windows begin",
    "tests/alerts/test_real_alertmanager.py": "a real Alertmanager expires alerts against the machine's clock",
    "tests/test_suite_rules.py": "names the calls it looks for",
}
"""Files allowed to read the wall clock, and why; none of them builds its data from it."""


def test_no_test_reads_the_wall_clock_to_choose_its_data() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        if name in READS_THE_REAL_CLOCK:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if WALL_CLOCK.search(line):
                found.append(f"{name}:{number}: {line.strip()}")
    assert not found, "use fixed dates or gpusteward.clock.FakeClock:\n" + "\n".join(found)


def test_the_allow_list_names_only_files_that_exist() -> None:
    assert all((ROOT / name).exists() for name in READS_THE_REAL_CLOCK)


SKIPPING = """
import pytest

def test_skipped():
    pytest.skip("no widget here")

def test_passes():
    pass
"""


def _pytest(tmp_path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "test_sample.py").write_text(SKIPPING, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "GPUSTEWARD_SKIP_LOG")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.suite_rules", "-p", "no:cacheprovider", "-q",
         "-c", str(tmp_path / "pytest.ini"), str(tmp_path / "test_sample.py")],
        env={**environ, "PYTHONPATH": str(ROOT), **env}, cwd=ROOT, capture_output=True, text=True, check=False,
    )


def test_a_skip_fails_under_ci(tmp_path: Path) -> None:
    ran = _pytest(tmp_path, CI="true")
    assert ran.returncode == 1, ran.stdout
    assert "1 failed, 1 passed" in ran.stdout
    assert "skipped under CI=true, where every skip is a failure: no widget here" in ran.stdout


def test_a_skip_outside_ci_is_logged_for_the_closing_list(tmp_path: Path) -> None:
    log = tmp_path / "skips.txt"
    ran = _pytest(tmp_path, GPUSTEWARD_SKIP_LOG=str(log))
    assert ran.returncode == 0, ran.stdout
    assert "1 passed, 1 skipped" in ran.stdout
    assert log.read_text(encoding="utf-8") == "test_sample.py::test_skipped: no widget here\n"


def test_update_golden_is_refused_under_ci(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "g.md").write_text("old\n", encoding="utf-8")
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    monkeypatch.setattr(golden, "IN_CI", True)
    with pytest.raises(AssertionError, match="refused under CI"):
        golden.assert_golden("g.md", "new\n", golden_dir=tmp_path)
    assert (tmp_path / "g.md").read_text(encoding="utf-8") == "old\n"


def test_update_golden_rewrites_and_shows_the_diff(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "g.md").write_text("old\n", encoding="utf-8")
    monkeypatch.setenv("UPDATE_GOLDEN", "1")
    monkeypatch.setattr(golden, "IN_CI", False)
    golden.assert_golden("g.md", "new\n", golden_dir=tmp_path)
    assert (tmp_path / "g.md").read_text(encoding="utf-8") == "new\n"
    assert "-old\n+new\n" in capsys.readouterr().err


def test_a_golden_that_differs_fails_with_its_diff(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "g.md").write_text("old\n", encoding="utf-8")
    monkeypatch.delenv("UPDATE_GOLDEN", raising=False)
    with pytest.raises(AssertionError, match=r"(?s)differs from the golden file.*-old\n\+new"):
        golden.assert_golden("g.md", "new\n", golden_dir=tmp_path)


def test_the_date_sweep_moves_every_python_process_clock_but_not_the_monotonic_one() -> None:
    from tests.dates import MOMENTS, SITECUSTOMIZE

    leap = next(m for m in MOMENTS if m.when.startswith("2028-02-29"))
    code = (
        "import datetime, time, threading\n"
        "t = time.monotonic(); threading.Event().wait(0.05); waited = time.monotonic() - t\n"
        "print(datetime.date.today(), datetime.datetime.fromtimestamp(time.time(), datetime.UTC).hour, waited < 5)\n"
    )
    env = {**os.environ, "GPUSTEWARD_TEST_NOW": leap.iso(), "TZ": leap.tz, "PYTHONPATH": str(SITECUSTOMIZE)}
    ran = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert ran.stdout.split() == ["2028-02-29", "12", "True"]
    # Every sweep path names a file or folder that exists, so a rename cannot drop a test from the sweep.
    from tests.dates import SWEEP

    assert [p for p in SWEEP if not (ROOT / p.partition("::")[0]).exists()] == []


def test_the_main_run_leaves_out_exactly_the_swept_tests() -> None:
    from tests.dates import HEAVY, swept

    kill = next(t for t in HEAVY if "::" in t)
    assert swept("tests/service/test_serve.py::test_a_day")
    assert swept("tests/service/test_grafana_dashboard_real.py::test_every_panel_query_parses_and_returns_series")
    assert swept(kill)
    assert swept(f"{kill}[x]")
    assert not swept("tests/service/test_serve_live.py::test_every_served_minute_is_stored_once")
    assert not swept("tests/faults/test_service_faults.py::test_the_folder_import_survives_a_full_disk")


def test_every_module_reading_the_served_day_runs_in_the_sweep_beside_test_serve() -> None:
    """The served day (tests/service/conftest.py's `served`) takes minutes to build: a module that reads it in
    the main run would build it a second time (the DST sweep builds it for test_serve)."""
    from tests.dates import HEAVY, ROOT

    readers = {
        str(path.relative_to(ROOT)) for path in (ROOT / "tests").rglob("test_*.py")
        if re.search(r"def \w+\([^)]*(?<!\w)served: ServedDay", path.read_text(encoding="utf-8"))
    }
    assert "tests/service/test_serve.py" in readers
    assert readers <= set(HEAVY), sorted(readers - set(HEAVY))
