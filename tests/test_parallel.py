"""tests/parallel.py: on two xdist workers, a fixture shared by several modules is still built once; the
groups holding a slow test run first."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CONFTEST = """
import os
from pathlib import Path

import pytest


def _built(name):
    with Path(os.environ["BUILT_LOG"]).open("a") as log:
        log.write(name + "\\n")


@pytest.fixture(scope="session")
def month():
    _built("month")
    return 31


@pytest.fixture(scope="module")
def table():
    _built("table")
    return {}
"""

MODULE = """
def test_{name}_a(month, table):
    assert month == 31

def test_{name}_b(month, table):
    assert month == 31

def test_{name}_c(table):
    assert table == {{}}
"""

ALONE = """
import pytest

@pytest.mark.parametrize("n", range(6))
def test_alone(n, table):
    assert n < 6
"""


def _pytest(folder: Path, *, workers: int, **env: str) -> subprocess.CompletedProcess[str]:
    """pytest over `folder`'s tests on `workers` xdist workers with tests/parallel.py's scheduling."""
    environ = {k: v for k, v in os.environ.items() if k not in ("CI", "GPUSTEWARD_SKIP_LOG")}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "tests.parallel", "-p", "no:cacheprovider", "-q",
         "-n", str(workers), "--dist", "loadscope", "-c", str(folder / "pytest.ini"), str(folder)],
        env={**environ, "PYTHONPATH": str(ROOT), **env},
        cwd=ROOT, capture_output=True, text=True, check=False,
    )


def test_a_shared_fixture_is_built_once_on_two_workers(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST, encoding="utf-8")
    sharing = ("first", "second", "third", "fourth")
    for name in sharing:
        (tmp_path / f"test_{name}.py").write_text(MODULE.format(name=name), encoding="utf-8")
    for name in ("alone", "lonely"):
        (tmp_path / f"test_{name}.py").write_text(ALONE.replace("test_alone", f"test_{name}"), encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\n", encoding="utf-8")
    log = tmp_path / "built.txt"
    ran = _pytest(tmp_path, workers=2, BUILT_LOG=str(log))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "24 passed" in ran.stdout
    built = log.read_text(encoding="utf-8").split()
    # one month for the four modules that use it (xdist's loadscope alone builds it on both workers);
    # one table per module
    assert built.count("month") == 1, built
    assert built.count("table") == len(sharing) + 2, built


MANY = """
import os
from pathlib import Path

import pytest

@pytest.mark.parametrize("n", range(8))
def test_{name}(n):
    with Path(os.environ["RAN_LOG"]).open("a") as log:
        log.write("{name}\\n")
"""

SLOW = """
import os
from pathlib import Path

import pytest

@pytest.mark.slow
def test_slow():
    with Path(os.environ["RAN_LOG"]).open("a") as log:
        log.write("slow\\n")
"""


def test_a_group_holding_a_slow_test_runs_before_groups_of_more_tests(tmp_path: Path) -> None:
    """xdist alone would run the modules of eight tests first and the slow one-test module last."""
    for name in ("alpha", "beta"):
        (tmp_path / f"test_{name}.py").write_text(MANY.format(name=name), encoding="utf-8")
    (tmp_path / "test_zulu.py").write_text(SLOW, encoding="utf-8")
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    slow: minutes\n", encoding="utf-8")
    log = tmp_path / "ran.txt"
    ran = _pytest(tmp_path, workers=1, RAN_LOG=str(log))
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "17 passed" in ran.stdout
    order = log.read_text(encoding="utf-8").split()
    assert order[0] == "slow", order
