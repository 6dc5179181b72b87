"""A small Kubernetes API client: list custom objects, and JSON Patch them with a `test` guard.

It speaks httpx2, the HTTP client lightkube builds on, so the TLS context and the authentication that
`collectors.kube.auth` gets from a kubeconfig or the pod's service account plug straight in.

CRDs take no strategic merge patch, so quota changes are RFC 6902 JSON Patches whose first
operation tests the current value: if someone changed the quota since it was read, the API
server refuses the whole patch (422), and nothing is written. `dry_run=True` adds `dryRun=All`.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import httpx2 as httpx
from lightkube.core.exceptions import ConfigError

from gpusteward.errors import InputError, PermanentError, TransientError


class PatchRefusedError(PermanentError):
    """The API server refused a guarded patch: the value under the `test` operation changed."""


@dataclass
class KubeApi:
    """`base_url` of the API server; `token` is sent as a Bearer token, or `auth` (a kubeconfig's token
    file, exec plugin) authenticates each request; `verify` is a CA bundle path or an SSL context (with
    the client certificate loaded); `credentials` names where they came from, for error messages;
    `transport` replaces the network."""

    base_url: str
    token: str | None = None
    verify: bool | str | ssl.SSLContext = True
    timeout_s: float = 30.0
    transport: httpx.BaseTransport | None = None
    auth: httpx.Auth | None = None
    credentials: str = "no credentials"
    _client: httpx.Client | None = field(default=None, init=False, repr=False)

    def client(self) -> httpx.Client:
        if self._client is None:
            headers = {"Accept": "application/json"}
            if self.token:
                headers["Authorization"] = f"Bearer {self.token}"
            verify = ssl.create_default_context(cafile=self.verify) if isinstance(self.verify, str) else self.verify
            self._client = httpx.Client(
                base_url=self.base_url,
                headers=headers,
                timeout=self.timeout_s,
                verify=verify,
                auth=self.auth,
                transport=self.transport,
            )
        return self._client

    def close(self) -> None:
        if self._client is not None:
            self._client.close()
            self._client = None

    def list(self, path: str) -> list[Mapping[str, Any]]:
        """The items of a list path such as `/apis/kueue.x-k8s.io/v1beta2/workloads`, following `continue`."""
        items: list[Mapping[str, Any]] = []
        params: dict[str, str] = {"limit": "500"}
        while True:
            data = self._send("GET", path, params=params)
            if not isinstance(data.get("items"), list):
                raise InputError(f"kubernetes {self.base_url}{path}", "no 'items' list: not a Kubernetes list")
            items.extend(i for i in data["items"] if isinstance(i, Mapping))
            token = (data.get("metadata") or {}).get("continue")
            if not token:
                return items
            params = {"limit": "500", "continue": str(token)}

    def get(self, path: str) -> dict[str, Any]:
        return self._send("GET", path)

    def json_patch(self, path: str, ops: Sequence[Mapping[str, Any]], *, dry_run: bool = False) -> dict[str, Any]:
        params = {"dryRun": "All"} if dry_run else None
        headers = {"Content-Type": "application/json-patch+json"}
        return self._send("PATCH", path, params=params, body=list(ops), headers=headers)

    def _send(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        source = f"kubernetes {self.base_url} {method} {path}"
        try:
            content = None if body is None else httpx.Request("POST", "/", json=body).content
            response = self.client().request(method, path, params=params, content=content, headers=headers)
        except httpx.TransportError as exc:
            if _untrusted_certificate(exc):
                raise PermanentError(
                    f"{source}: the API server's TLS certificate is not trusted: {exc} (using {self.credentials};"
                    " check the kubeconfig's certificate-authority, the service account's ca.crt or"
                    " kubernetes.ca_file)"
                ) from None
            raise TransientError(f"{source}: {type(exc).__name__}: {exc}") from None
        except (ConfigError, OSError, ValueError, KeyError) as exc:  # an exec plugin that failed or printed no token
            raise PermanentError(f"{source}: no credentials from {self.credentials}: {exc}") from None
        message = _status_message(response)
        if response.status_code == 401:
            raise PermanentError(
                f"{source}: HTTP 401 Unauthorized: {message}: the API server did not accept the credentials of"
                f" {self.credentials} (a wrong, expired or revoked token, or a client certificate it does not trust)"
            )
        if response.status_code == 403:
            raise PermanentError(
                f"{source}: HTTP 403 Forbidden: {message}: {self.credentials} was recognised but RBAC does not"
                " allow this (docs/kubernetes.md#rbac lists the verbs GPU Steward needs)"
            )
        if response.status_code in (409, 422) and method == "PATCH":
            raise PatchRefusedError(f"{source}: HTTP {response.status_code}: {message}")
        if response.status_code >= 500 or response.status_code == 429:
            raise TransientError(f"{source}: HTTP {response.status_code}: {message}")
        if response.status_code >= 400:
            raise PermanentError(f"{source}: HTTP {response.status_code}: {message}")
        try:
            data = response.json()
        except ValueError as exc:
            raise InputError(source, f"not valid JSON: {exc}") from None
        if not isinstance(data, dict):
            raise InputError(source, f"expected a JSON object, got {type(data).__name__}")
        return data


def _untrusted_certificate(exc: BaseException) -> bool:
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, ssl.SSLCertVerificationError) or "CERTIFICATE_VERIFY_FAILED" in str(seen):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _status_message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text.strip()[:200] or response.reason_phrase
    if isinstance(data, dict) and data.get("kind") == "Status":
        return str(data.get("message") or data.get("reason") or response.reason_phrase)
    return response.reason_phrase


def escape(segment: str) -> str:
    """A JSON Pointer segment (RFC 6901): `nvidia.com/gpu` -> `nvidia.com~1gpu`."""
    return segment.replace("~", "~0").replace("/", "~1")


def quantity(value: Any, *, source: str) -> int | None:
    """A whole-number Kubernetes quantity (`8`, `"16"`, `"2k"`) as an int; absent is None."""
    if value is None:
        return None
    text = str(value).strip()
    factors = {"k": 10**3, "M": 10**6, "G": 10**9, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30}
    for suffix, factor in sorted(factors.items(), key=lambda kv: -len(kv[0])):
        if text.endswith(suffix) and text[: -len(suffix)].isdigit():
            return int(text[: -len(suffix)]) * factor
    if text.isdigit():
        return int(text)
    raise InputError(source, f"GPU quantity {text!r} is not a whole number")
