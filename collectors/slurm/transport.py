"""How the Slurm client reaches Slurm: the CLI (`sacct`, `sacctmgr`, `squeue`) or slurmrestd.

Both transports turn failures into errors that say what to do next and name the source:
a missing binary or a refused token is a `PermanentError`, a daemon that is down or answers 5xx a
`TransientError`, output that is not JSON an `InputError`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx

from gpusteward.errors import InputError, PermanentError, TransientError

_PACKAGES = {"sacct": "slurm-client", "sacctmgr": "slurm-client", "squeue": "slurm-client", "scontrol": "slurm-client"}


@dataclass(frozen=True)
class SlurmCli:
    """Runs Slurm commands. `path` replaces PATH for finding them; `env` is added to the environment.

    Times are printed in UTC (`TZ=UTC`) so text output matches the JSON's epoch seconds.
    """

    path: str | None = None
    env: Mapping[str, str] = field(default_factory=dict)
    timeout_s: float = 120.0

    def binary(self, name: str) -> str:
        found = shutil.which(name, path=self.path)
        if found is None:
            package = _PACKAGES.get(name, "slurm-client")
            where = self.path if self.path is not None else os.environ.get("PATH", "")
            raise PermanentError(f"{name}: not found on PATH ({where}); install the Debian package {package}")
        return found

    def run(self, name: str, args: Sequence[str]) -> str:
        command = [self.binary(name), *args]
        env = {**os.environ, **self.env, "TZ": "UTC"}
        try:
            done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=self.timeout_s, check=False)
        except subprocess.TimeoutExpired:
            raise TransientError(f"{name}: no answer within {self.timeout_s:.0f} s ({' '.join(command)})") from None
        if done.returncode != 0:
            detail = (done.stderr or done.stdout).strip().splitlines()
            message = detail[-1] if detail else "no output"
            raise TransientError(f"{name}: exit status {done.returncode}: {message} ({' '.join(command)})")
        return done.stdout

    def json(self, name: str, args: Sequence[str]) -> Any:
        text = self.run(name, args)
        return parse_json(text, source=f"{name} {' '.join(args)}")


def parse_json(text: str, *, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(source, f"not valid JSON: {exc.msg} (column {exc.colno})", line=exc.lineno) from None
    except RecursionError:  # Python's parser recurses per level: a hostile answer nests 10,000 deep
        raise InputError(source, "JSON nested too deep to be Slurm output") from None


@dataclass
class SlurmRest:
    """A slurmrestd client over a unix socket (`rest_auth/local`) or TCP with JWT (`rest_auth/jwt`).

    Give `socket` for a unix socket, else `base_url`. With `user` and `token` every request carries
    `X-SLURM-USER-NAME` and `X-SLURM-USER-TOKEN`. `transport` replaces the network (tests).
    """

    base_url: str = "http://slurmrestd"
    socket: str | None = None
    user: str | None = None
    token: str | None = None
    timeout_s: float = 60.0
    transport: httpx.BaseTransport | None = None
    _client: httpx.Client | None = field(default=None, init=False, repr=False)

    @property
    def where(self) -> str:
        return f"slurmrestd unix:{self.socket}" if self.socket else f"slurmrestd {self.base_url}"

    def client(self) -> httpx.Client:
        if self._client is None:
            transport = self.transport
            if transport is None and self.socket:
                transport = httpx.HTTPTransport(uds=self.socket)
            headers = {"Accept": "application/json"}
            if self.user and self.token:
                headers |= {"X-SLURM-USER-NAME": self.user, "X-SLURM-USER-TOKEN": self.token}
            self._client = httpx.Client(
                base_url=self.base_url, transport=transport, headers=headers, timeout=self.timeout_s
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def get(self, path: str, params: Mapping[str, str] | None = None) -> Any:
        return self._send("GET", path, params=params)

    def post(self, path: str, body: Any) -> Any:
        return self._send("POST", path, body=body)

    def delete(self, path: str) -> Any:
        return self._send("DELETE", path)

    def _send(self, method: str, path: str, *, params: Mapping[str, str] | None = None, body: Any = None) -> Any:
        source = f"{self.where} {method} {path}"
        try:
            response = self.client().request(method, path, params=params, json=body)
        except httpx.TransportError as exc:
            raise TransientError(f"{source}: {type(exc).__name__}: {exc}") from None
        status = response.status_code
        if status in (401, 403):
            raise PermanentError(f"{source}: HTTP {status}: {_detail(response)} (check the user and JWT)")
        if status >= 500:
            raise TransientError(f"{source}: HTTP {status}: {_detail(response)}")
        data = parse_json(response.text, source=source)
        if status >= 400:
            raise PermanentError(f"{source}: HTTP {status}: {_errors(data) or response.text[:200]}")
        if not isinstance(data, dict):
            raise InputError(source, f"expected a JSON object, got {type(data).__name__}")
        errors = _errors(data)
        if errors:
            raise PermanentError(f"{source}: slurmrestd reported errors: {errors}")
        return data


def _detail(response: httpx.Response) -> str:
    try:
        data = response.json()
    except (ValueError, RecursionError):
        return response.text.strip()[:200] or response.reason_phrase
    return _errors(data) or response.reason_phrase


def _errors(data: Any) -> str:
    if not isinstance(data, dict):
        return ""
    found = []
    for err in data.get("errors") or []:
        if isinstance(err, dict):
            text = err.get("description") or err.get("error") or ""
            code = err.get("error_number") or err.get("errno")
            found.append(f"{text} ({code})" if code else str(text))
        else:
            found.append(str(err))
    return "; ".join(f for f in found if f)
