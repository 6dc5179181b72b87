"""Run the service with a synthetic live source and stop its spool's drain at a known point, for `kill -9` tests.

`python -m tests.faults.spooled ROOT POINT NTH FIRST` runs `service.serve.Service` in real time on
the warehouse `ROOT/gpusteward.duckdb`: the collection lane spools one synthetic minute per 0.2 s (batch k
is minute T0 + (FIRST + k) minutes) and writes each batch id to `ROOT/acked` once its append has
returned (acknowledged). POINT says where the writer stops at its NTH batch, with `ROOT/paused`
created, until the test kills the process: `commit` (its rows written, the transaction open),
`remove` (committed, its spool file not yet removed) or `none` (never).
"""

from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from collectors.batch import CollectedBatch
from gpusteward.config import example_config_path, load_config_text
from tests.faults.paused import PAUSE_S
from tests.service.spool_batches import minute_batch

T0 = datetime(2026, 10, 2, tzinfo=UTC)
INTERVAL = timedelta(seconds=0.2)


@dataclass
class Synthetic:
    """A live source whose batch k is minute T0 + (first + k)."""

    first: int
    name: str = "synthetic"
    registry: None = None

    def collect(self, now: datetime) -> CollectedBatch:
        batch = minute_batch(T0 + timedelta(minutes=self.first))
        self.first += 1
        return batch


def _stop_there(marker: Path) -> None:
    marker.write_text("paused\n", encoding="utf-8")
    threading.Event().wait(PAUSE_S)
    raise SystemExit(f"not killed within {PAUSE_S} s")


def pause_drain(root: Path, point: str, nth: int) -> None:
    """Stop the writer at `point` of its `nth` spool batch."""
    from service.spool import Spool
    from warehouse import ingest

    calls = {"n": 0}
    if point == "commit":
        real_rows = ingest.ingest_gpu_minutes

        def rows_then_stop(*args: Any, **kwargs: Any) -> int:
            stored = real_rows(*args, **kwargs)
            calls["n"] += 1
            if calls["n"] == nth:
                _stop_there(root / "paused")
            return stored

        ingest.ingest_gpu_minutes = rows_then_stop
    elif point == "remove":
        real_remove = Spool.remove

        def stop_before_remove(self: Spool, path: Path) -> None:
            calls["n"] += 1
            if calls["n"] == nth:
                _stop_there(root / "paused")
            real_remove(self, path)

        Spool.remove = stop_before_remove  # type: ignore[method-assign]


def acknowledge_to(log: Path) -> None:
    """Write each batch id to `log` once the spool acknowledged it (the test's record of what must survive)."""
    from service.spool import Spool

    real_append = Spool.append

    def append(self: Spool, batch: CollectedBatch, collected_at: datetime) -> str:
        batch_id = real_append(self, batch, collected_at)
        with log.open("a", encoding="utf-8") as out:
            out.write(batch_id + "\n")
            out.flush()
            os.fsync(out.fileno())
        return batch_id

    Spool.append = append  # type: ignore[method-assign]


def main(argv: list[str]) -> None:
    root, point, nth, first = Path(argv[0]), argv[1], int(argv[2]), int(argv[3])
    pause_drain(root, point, nth)
    acknowledge_to(root / "acked")
    import signal

    from service.serve import ServeSettings, Service

    text = Path(example_config_path()).read_text(encoding="utf-8")
    config = load_config_text(text, base_dir=str(root))  # the warehouse: ROOT/gpusteward.duckdb
    settings = ServeSettings(read_model=root / "readmodel", port=0, live_sources=((Synthetic(first), INTERVAL),))
    service = Service(config, settings)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: service.stop.set())
    service.run()


if __name__ == "__main__":
    main(sys.argv[1:])
