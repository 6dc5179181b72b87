"""Progress reporting for long stages, on stderr so stdout stays machine-readable."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager


@contextmanager
def stage_progress(stage: str) -> Iterator[Callable[[str, int, int], None]]:
    """A callback `(step, done, total)` that redraws one status line; cleared at the end."""
    started = time.monotonic()
    interactive = sys.stderr.isatty()

    def report(step: str, done: int, total: int) -> None:
        line = f"{stage}: {step} {done}/{total} ({time.monotonic() - started:.0f}s)"
        if interactive:
            sys.stderr.write("\r" + line.ljust(70))
        elif done == total:
            sys.stderr.write(line + "\n")
        sys.stderr.flush()

    yield report
    if interactive:
        sys.stderr.write("\n")
        sys.stderr.flush()
