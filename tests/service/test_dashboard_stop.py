"""Stopping `gpusteward dashboard` with SIGTERM or SIGINT stops the Streamlit server it started."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from gpusteward.config import example_config_path
from tests.service.dashboard_process import alive, children, port_open, shadowing_folder, start_cli_dashboard


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_stop_signal_stops_the_streamlit_server_too(tmp_path: Path, signum: signal.Signals) -> None:
    folder = shadowing_folder(tmp_path / "demo-out")
    config = folder / "gpusteward.toml"
    config.write_bytes(Path(example_config_path()).read_bytes())
    process, port = start_cli_dashboard(folder, config, folder / "gpusteward.duckdb")
    servers: set[int] = set()
    try:
        servers = children(process.pid)
        assert servers, "gpusteward dashboard started no child process"
        process.send_signal(signum)
        code = process.wait(timeout=30)
        deadline = time.monotonic() + 10
        while port_open(port) or any(alive(pid) for pid in servers):
            assert time.monotonic() < deadline, (
                f"after {signum.name}: port {port} open={port_open(port)}, "
                f"children left={[pid for pid in servers if alive(pid)]}")
            time.sleep(0.1)
        assert code == 128 + signum  # the shell's convention for "ended by this signal", after cleaning up
    finally:
        for pid in servers:  # a failed run leaves no server behind for the next test
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
        if process.poll() is None:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
