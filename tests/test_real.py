"""tests/real.py's wait for the spark extra that `./dev test` installs beside the tests."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tests.real import SPARK_INSTALL, wait_for_spark_install


def test_a_failed_install_fails_the_test_with_its_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status = tmp_path / "spark.status"
    status.write_text("2 140\n")
    Path(f"{status}.log").write_text("error: Failed to download `pyspark==4.3.0`\n")
    monkeypatch.setenv(SPARK_INSTALL, str(status))
    failed = r"(?s)installing the spark extra failed \(exit 2\).*pyspark==4.3.0"
    with pytest.raises(pytest.fail.Exception, match=failed):
        wait_for_spark_install()


def test_an_install_that_never_ends_fails_at_the_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(SPARK_INSTALL, str(tmp_path / "never"))
    with pytest.raises(pytest.fail.Exception, match=r"did not end within 1 s"):
        wait_for_spark_install(timeout_s=1, poll_s=0.1)


def test_the_wait_ends_when_the_install_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    status = tmp_path / "spark.status"
    monkeypatch.setenv(SPARK_INSTALL, str(status))
    ended = threading.Timer(0.5, lambda: status.write_text("0 95\n"))
    ended.start()
    try:
        wait_for_spark_install(timeout_s=60, poll_s=0.1)
    finally:
        ended.cancel()
    assert status.read_text() == "0 95\n"


def test_no_install_under_way_means_no_wait(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(SPARK_INSTALL, raising=False)
    wait_for_spark_install(timeout_s=0)
