"""Run the CLI with one GPU-minute write paused inside its transaction, for `kill -9` tests.

`python -m tests.faults.paused MARKER N ARGS...` runs `gpusteward ARGS...`; its Nth call to
`warehouse.ingest.ingest_gpu_minutes` writes its rows, creates MARKER and then waits, its
transaction open, with the batches before it committed. A test kills the process with SIGKILL once
MARKER exists: the kill lands at that known point on any machine, fast or slow.
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

PAUSE_S = 600  # the test kills the process long before; a bound so a forgotten process ends by itself


def pause_at(marker: Path, nth: int) -> None:
    from warehouse import ingest

    real = ingest.ingest_gpu_minutes
    calls = {"n": 0}

    def paused(*args: Any, **kwargs: Any) -> int:
        stored = real(*args, **kwargs)
        calls["n"] += 1
        if calls["n"] == nth:
            marker.write_text(f"paused in batch {nth}\n", encoding="utf-8")
            threading.Event().wait(PAUSE_S)
            raise SystemExit(f"not killed within {PAUSE_S} s")
        return stored

    ingest.ingest_gpu_minutes = paused


def main(argv: list[str]) -> None:
    marker, nth, *args = argv
    pause_at(Path(marker), int(nth))
    from service.cli import main as cli

    sys.argv = ["gpusteward", *args]
    cli()


if __name__ == "__main__":
    main(sys.argv[1:])
