"""Start the Streamlit dashboard on loopback as a child process."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from importlib import resources
from pathlib import Path
from typing import IO


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
    return start_streamlit(app, [*source, "--config", config_path, *api, *app_args], port=port)


# Each page open runs the app's script in a new session, and Streamlit by default ends every run with a full
# garbage collection (gc.collect(2), holding the interpreter while the run's last messages wait to be sent) and
# rewrites every page script's syntax tree for "magic" (a bare expression written on the page). Over the demo
# month's read model, without both the server's CPU per open fell by 0.1-0.15 s on every page (py-spy had put
# the collection at about 0.2 s; docs/performance.md "2026-12-03, evening"); Python's own generational collection
# still runs as objects are allocated, and the pages write nothing by magic.
LEANER_RUNS = ("--runner.postScriptGC", "false", "--runner.magicEnabled", "false")


def start_streamlit(
    script: Path, script_args: Sequence[str] = (), *, port: int | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """`streamlit run script -- script_args` bound to 127.0.0.1, headless, without telemetry or file
    watching; return the process once it listens, and its URL."""
    port = port or free_port()
    command = [
        sys.executable,
        "-m",
        "streamlit",
        "run",
        str(script),
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
        *LEANER_RUNS,
        "--",
        *script_args,
    ]
    # Streamlit's log goes to a file, not a pipe: a pipe nobody reads fills up and then blocks the server.
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log)
        url = f"http://127.0.0.1:{port}/"
        try:
            _wait_until_listening(port, process, log)
        except BaseException:  # a failed start, or Ctrl-C or SIGTERM meanwhile: leave no server behind
            stop_process(process)
            raise
    return process, url


def _wait_until_listening(port: int, process: subprocess.Popen[bytes], log: IO[bytes],
                          timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if process.poll() is not None:
            log.seek(0)
            err = log.read().decode(errors="replace")
            raise RuntimeError(f"the dashboard exited with code {process.returncode}: {err[-2000:]}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise RuntimeError(f"the dashboard did not listen on 127.0.0.1:{port} within {timeout_s:.0f}s")


def serve_dashboard(
    db_path: str, config_path: str, *, port: int | None = None, read_model: str | None = None,
    api_url: str | None = None,
) -> None:
    """Start the dashboard, print its URL, and keep it running until Ctrl-C, SIGINT or SIGTERM, which stop
    the Streamlit server too (a service manager's `stop` sends SIGTERM to this process only)."""
    import click

    process: subprocess.Popen[bytes] | None = None
    try:
        # The handlers come first: a signal while the server starts must stop it too (start_dashboard does).
        with _signals_raise(signal.SIGTERM, signal.SIGINT):
            process, url = start_dashboard(db_path, config_path, port=port, read_model=read_model, api_url=api_url)
            click.echo(f"dashboard: {url}  (Ctrl-C to stop)")
            process.wait()
    except _Stopped as stopped:
        raise SystemExit(128 + stopped.signum) from None
    finally:
        if process is not None:
            stop_process(process)


class _Stopped(BaseException):  # like KeyboardInterrupt: no `except Exception` swallows it
    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


@contextmanager
def _signals_raise(*signums: signal.Signals) -> Iterator[None]:
    """While inside, each of these signals raises _Stopped; the previous handlers come back after."""

    def stop(signum: int, _frame: object) -> None:
        raise _Stopped(signum)

    previous = {signum: signal.signal(signum, stop) for signum in signums}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


def stop_process(process: subprocess.Popen[bytes], timeout_s: float = 10.0) -> None:
    """SIGTERM, then SIGKILL after `timeout_s`; returns once the process is reaped."""
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
