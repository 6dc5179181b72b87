"""`gpusteward dashboard` as a user starts it: the console command, in a working folder of the test's choosing."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from service.dashboard import free_port

SHADOWING = ("reports", "alerts", "warehouse")  # what `gpusteward demo` leaves in its output folder


def shadowing_folder(where: Path) -> Path:
    """A folder like the demo's output: `reports/`, `alerts/` and `warehouse/` folders with files in them,
    named like the product's packages, none of them a package."""
    where.mkdir(parents=True, exist_ok=True)
    for name in SHADOWING:
        (where / name).mkdir(exist_ok=True)
        (where / name / "README.txt").write_text("not the product's package\n", encoding="utf-8")
    return where


def start_cli_dashboard(cwd: Path, config: Path, db: Path) -> tuple[subprocess.Popen[bytes], int]:
    """`gpusteward dashboard` started in `cwd`; returns once its Streamlit server listens."""
    port = free_port()
    command = [str(Path(sys.executable).with_name("gpusteward")), "dashboard", "--config", str(config),
               "--db", str(db), "--port", str(port)]
    process = subprocess.Popen(command, cwd=cwd, env=dict(os.environ), stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    while not port_open(port):
        if process.poll() is not None:
            out = process.stdout.read().decode(errors="replace") if process.stdout else ""
            raise AssertionError(f"gpusteward dashboard exited with {process.returncode}: {out[-2000:]}")
        assert time.monotonic() < deadline, "gpusteward dashboard did not listen within 60 s"
        time.sleep(0.2)
    return process, port


def port_open(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def children(pid: int) -> set[int]:
    """The process ids whose parent is `pid` (every thread's list, from /proc)."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.update(int(c) for c in (task / "children").read_text().split())
    return found


def alive(pid: int) -> bool:
    """True while `pid` exists and is not a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"
