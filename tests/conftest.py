"""Suite-wide fixtures; the suite's rules (skips under CI, the skip list) are in tests/suite_rules.py."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

from tests import dates

pytest_plugins = ("tests.suite_rules", "tests.parallel")


def pytest_configure(config: pytest.Config) -> None:
    """The CLI speaks the locale's language ($LANG zh_* is Chinese); a test's verdict must not depend on the
    machine's locale, so every test, and every child it starts, runs in English unless it asks otherwise."""
    os.environ["GPUSTEWARD_LANG"] = "en"


@pytest.hookimpl(trylast=True)  # after -k and -m have chosen
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    dates.leave_out_swept(config, items)


@pytest.fixture(autouse=True)
def _restore_main_module() -> Iterator[None]:
    """Streamlit's AppTest runs a page script as `__main__` and leaves it there; a later test whose
    code starts worker processes (the simulator's spawn pool) would then re-run that script in
    every worker. Put the real `__main__` back after each test."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main
