"""Suite-wide fixtures; the suite's rules (skips under CI, the skip list) are in tests/suite_rules.py."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest

pytest_plugins = ("tests.suite_rules", "tests.parallel")


@pytest.fixture(autouse=True)
def _restore_main_module() -> Iterator[None]:
    """Streamlit's AppTest runs a page script as `__main__` and leaves it there; a later test whose
    code starts worker processes (the simulator's spawn pool) would then re-run that script in
    every worker. Put the real `__main__` back after each test."""
    main = sys.modules.get("__main__")
    yield
    if main is not None:
        sys.modules["__main__"] = main
