"""Start the Streamlit dashboard on loopback as a child process."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from importlib import resources
from pathlib import Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_dashboard(
    db_path: str | None,
    config_path: str,
    *,
    port: int | None = None,
    read_model: str | None = None,
    api_url: str | None = None,
    app_args: Sequence[str] = (),
) -> tuple[subprocess.Popen[bytes], str]:
    """Run `streamlit run dashboards/app.py` bound to 127.0.0.1; return the process and its URL.

    With `read_model` the dashboard reads what `gpusteward serve` publishes (and acts through `api_url`);
    otherwise it opens `db_path` read-only, which only works while no service writes the file.
    `app_args`: more of the app's options (`--user-header NAME`, `--team-header NAME`, ...)."""
    source = ["--read-model", read_model] if read_model else ["--db", str(db_path)]
    api = ["--api", api_url] if api_url else []
    app = Path(str(resources.files("dashboards").joinpath("app.py")))
    port = port or free_port()
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(app),
        "--server.address",
        "127.0.0.1",
        "--server.port",
        str(port),
        "--server.headless",
        "true",
        "--browser.gatherUsageStats",
        "false",
        "--global.developmentMode",
        "false",
        "--server.fileWatcherType",
        "none",
        "--client.toolbarMode",
        "minimal",
        "--",
        *source,
        "--config",
        config_path,
        *api,
        *app_args,
    ]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/"
    _wait_until_listening(port, process)
    return process, url


def _wait_until_listening(port: int, process: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            err = process.stderr.read().decode(errors="replace") if process.stderr else ""
            raise RuntimeError(f"the dashboard exited with code {process.returncode}: {err[-2000:]}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    process.terminate()
    raise RuntimeError(f"the dashboard did not listen on 127.0.0.1:{port} within {timeout_s:.0f}s")


def serve_dashboard(db_path: str, config_path: str, *, port: int | None = None) -> None:
    """Start the dashboard, print its URL, and keep it running until Ctrl-C."""
    import click

    process, url = start_dashboard(db_path, config_path, port=port)
    click.echo(f"dashboard: {url}  (Ctrl-C to stop)")
    try:
        process.wait()
    except KeyboardInterrupt:
        process.terminate()
        process.wait(timeout=10)
