from __future__ import annotations

import threading
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from dashboards.data import load_overview
from simulator import simulate
from tests.service.serve_helpers import ServedDay, start_service, stop_service
from warehouse.readmodel import NoReadModelError, load_read_model, open_read_model


def _reader(served: ServedDay, stop: threading.Event) -> None:
    """What the dashboard does, in a loop, while the service writes: read the published read model."""
    while not stop.is_set():
        try:
            model = load_read_model(served.root / "readmodel")
            if model.months():
                load_overview(served.root / "readmodel", None, opener=open_read_model)
            if not served.reads or served.reads[-1] != model.version:
                served.reads.append(model.version)
        except NoReadModelError:
            pass
        except Exception as exc:
            served.read_errors.append(f"{type(exc).__name__}: {exc}")
        stop.wait(0.05)


@pytest.fixture(scope="session")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServedDay]:
    """The service after a simulated day (2026-10-02, 64 GPUs), still running and answering HTTP."""
    staging = tmp_path_factory.mktemp("sim")
    simulate(staging, date(2026, 10, 1), 2, 7, nodes=8)
    day = start_service(tmp_path_factory.mktemp("svc"), staging)
    stop_reader = threading.Event()
    reader = threading.Thread(target=_reader, args=(day, stop_reader), daemon=True)
    reader.start()
    try:
        assert day.service.ready.wait(120), "the service never became ready"
        assert day.day_done.wait(1200), "the simulated day did not finish"  # a hang, not a speed limit
        stop_reader.set()
        reader.join(timeout=30)
        yield day
    finally:
        stop_reader.set()
        stop_service(day)


@pytest.fixture(scope="session")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One full `gpusteward demo` (the simulated October 2026) shared by the tests that read it."""
    from click.testing import CliRunner

    from service.cli import cli

    out = tmp_path_factory.mktemp("demo")
    result = CliRunner().invoke(cli, ["demo", "--out", str(out), "--seed", "7"])
    assert result.exit_code == 0, result.output + repr(result.exception)
    return out
