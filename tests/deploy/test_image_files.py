"""deploy/image: the HEALTHCHECK's probe against a real HTTP server, and the Containerfile's promises
checked against the code they depend on. The image itself is built and run by `python -m bench image`
(buildah and podman, minutes: docs/deploy.md#container)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
import tomllib
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from gpusteward.config.service import ServiceConfig

DEPLOY = Path(__file__).resolve().parents[2] / "deploy" / "image"
CONTAINERFILE = (DEPLOY / "Containerfile").read_text(encoding="utf-8")


class _Answers(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status = {"/healthz": 200, "/readyz": 503}.get(self.path, 404)
        self.send_response(status)
        self.end_headers()
        self.wfile.write(b"ok\n" if status == 200 else b"starting\n")

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Answers)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def _probe(base: str, path: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(DEPLOY / "probe.py"), path], env={"GPUSTEWARD_PROBE_BASE": base},
                          capture_output=True, text=True, timeout=30, check=False)


def test_the_probe_passes_on_200_and_fails_on_503_or_no_answer(server: str) -> None:
    assert _probe(server, "/healthz").returncode == 0
    assert _probe(server, "/readyz").returncode == 1
    with socket.socket() as bound:  # a port bound but not listening: the connection is refused
        bound.bind(("127.0.0.1", 0))
        base = f"http://127.0.0.1:{bound.getsockname()[1]}"
        refused = _probe(base, "/healthz")
    assert refused.returncode == 1
    assert base in refused.stderr  # says which address did not answer


def _instruction(name: str) -> str:
    lines = [line for line in CONTAINERFILE.splitlines() if line.startswith(name + " ")]
    assert lines, f"no {name} in the Containerfile"
    return lines[-1].removeprefix(name + " ").strip()


def test_the_image_runs_as_a_non_root_user() -> None:
    user = _instruction("USER")
    assert user.split(":")[0] not in ("0", "root")
    assert f"--uid {user.split(':')[0]}" in CONTAINERFILE


def test_the_exposed_port_and_the_probe_default_are_the_services_default_listen() -> None:
    port = ServiceConfig().listen.rsplit(":", 1)[1]
    assert _instruction("EXPOSE") == port
    assert f"127.0.0.1:{port}" in (DEPLOY / "probe.py").read_text(encoding="utf-8")


def test_the_entry_point_is_the_console_command_and_the_volume_holds_home_and_caches() -> None:
    pyproject = tomllib.loads((DEPLOY.parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    assert _instruction("ENTRYPOINT") == f'["{next(iter(pyproject["project"]["scripts"]))}"]'
    volume = _instruction("VOLUME").strip('[]"')
    for variable in ("HOME", "MPLCONFIGDIR", "NUMBA_CACHE_DIR"):
        assert f"{variable}={volume}" in CONTAINERFILE
    assert "fonts-noto-cjk" in CONTAINERFILE
    assert CONTAINERFILE.count("\nFROM ") == 2  # a build stage and the runtime
