"""A Kubernetes API stand-in on 127.0.0.1: serves recorded objects at their API paths, applies JSON Patch.

Lists (`/apis/G/V/plural`, all namespaces), named objects (cluster-scoped or
`/apis/G/V/namespaces/NS/plural/NAME`), and PATCH with `application/json-patch+json`
(add, replace, remove, test; a failed `test` answers 422 with a Status body, as the API server
does); `dryRun=All` answers without storing. `after_get` runs on each GET of a named object, after its
answer is taken and before it is sent, so a test can change the quota underneath a writer.

`serve(kube, tls=context)` serves HTTPS with the server certificate in `context`; with `kube.tokens`
or `kube.cert_users` set, a request must carry one of those bearer tokens or a client certificate
whose common name is listed (as the API server's token and x509 authenticators do), else it gets 401.
`kube.seen` records who each request was authenticated as.
"""

from __future__ import annotations

import copy
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlparse

PLURALS = {
    "ClusterQueue": "clusterqueues",
    "LocalQueue": "localqueues",
    "Cohort": "cohorts",
    "Workload": "workloads",
    "Queue": "queues",
    "PodGroup": "podgroups",
    "Deployment": "deployments",
}


class FakeKube:
    def __init__(self) -> None:
        self.objects: dict[str, dict[str, Any]] = {}  # path -> object
        self.patches: list[tuple[str, list[dict[str, Any]], bool]] = []
        self.after_get: Callable[[str], None] | None = None
        self.lock = threading.Lock()
        self.tokens: set[str] | None = None  # None (and no cert_users): no authentication asked
        self.cert_users: set[str] = set()
        self.seen: list[str] = []  # "token:<t>", "cert:<CN>"
        self.requests: list[tuple[str, str]] = []  # (method, path) of every authenticated request

    def add(self, obj: dict[str, Any], *, version: str | None = None) -> None:
        group, _, default_version = obj["apiVersion"].partition("/")
        plural = PLURALS[obj["kind"]]
        meta = obj["metadata"]
        ns = f"namespaces/{meta['namespace']}/" if meta.get("namespace") else ""
        self.objects[f"/apis/{group}/{version or default_version}/{ns}{plural}/{meta['name']}"] = obj

    def list(self, path: str) -> list[dict[str, Any]]:
        prefix, plural = path.rsplit("/", 1)
        return [
            o for p, o in sorted(self.objects.items()) if p.startswith(prefix + "/") and p.rsplit("/", 2)[-2] == plural
        ]


def _pointer(doc: Any, path: str) -> tuple[Any, str | int]:
    parts = [p.replace("~1", "/").replace("~0", "~") for p in path.lstrip("/").split("/")]
    for part in parts[:-1]:
        doc = doc[int(part)] if isinstance(doc, list) else doc[part]
    last = parts[-1]
    return doc, (int(last) if isinstance(doc, list) and last != "-" else last)


def apply_patch(doc: dict[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    for op in ops:
        parent, key = _pointer(out, op["path"])
        kind = op["op"]
        if kind == "test":
            if parent[key] != op["value"]:
                raise ValueError(f"testing value {op['path']} failed")
        elif kind in ("add", "replace"):
            if isinstance(parent, list) and kind == "add":
                parent.insert(len(parent) if key == "-" else int(key), op["value"])
            else:
                if kind == "replace" and key not in (range(len(parent)) if isinstance(parent, list) else parent):
                    raise ValueError(f"replace at missing {op['path']}")
                parent[key] = op["value"]
        elif kind == "remove":
            del parent[key]
        else:
            raise ValueError(f"unsupported op {kind}")
    return out


def _handler(kube: FakeKube) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, body: Any) -> None:
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _status(self, code: int, reason: str, message: str) -> None:
            self._send(
                code,
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "status": "Failure",
                    "message": message,
                    "reason": reason,
                    "code": code,
                },
            )

        def _authenticated(self) -> bool:
            if kube.tokens is None and not kube.cert_users:
                return True
            auth = self.headers.get("Authorization", "")
            if auth.startswith("Bearer ") and auth[7:] in (kube.tokens or set()):
                kube.seen.append(f"token:{auth[7:]}")
                return True
            peer = self.connection.getpeercert() if isinstance(self.connection, ssl.SSLSocket) else None
            subject: Any = (peer or {}).get("subject", ())  # ((("commonName", "steward"),), ...)
            names = [pair[1] for rdn in subject for pair in rdn if pair[0] == "commonName"]
            if names and names[0] in kube.cert_users:
                kube.seen.append(f"cert:{names[0]}")
                return True
            self._status(401, "Unauthorized", "Unauthorized")
            return False

        def do_GET(self) -> None:
            if not self._authenticated():
                return
            path = urlparse(self.path).path
            kube.requests.append(("GET", path))
            with kube.lock:
                obj = copy.deepcopy(kube.objects.get(path))
                items = None if obj is not None else kube.list(path)
                # Before the answer goes out: the client's next request can reach another handler
                # thread as soon as it has the answer, and must find the change already made.
                if obj is not None and kube.after_get is not None:
                    kube.after_get(path)
            if obj is not None:
                self._send(200, obj)
            elif items:
                self._send(200, {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": items})
            elif path.rsplit("/", 1)[-1] in PLURALS.values():
                self._send(200, {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []})
            else:
                self._status(404, "NotFound", f"{path} not found")

        def do_PATCH(self) -> None:
            if not self._authenticated():
                return
            url = urlparse(self.path)
            kube.requests.append(("PATCH", url.path))
            dry = parse_qs(url.query).get("dryRun") == ["All"]
            if self.headers.get("Content-Type") != "application/json-patch+json":
                self._status(415, "UnsupportedMediaType", "only JSON Patch here")
                return
            ops = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            with kube.lock:
                obj = kube.objects.get(url.path)
                if obj is None:
                    self._status(404, "NotFound", f"{url.path} not found")
                    return
                kube.patches.append((url.path, ops, dry))
                try:
                    patched = apply_patch(obj, ops)
                except (ValueError, KeyError, IndexError) as exc:
                    self._status(422, "Invalid", f"the server rejected our request: {exc}")
                    return
                if not dry:
                    kube.objects[url.path] = patched
            self._send(200, patched)

    return Handler


@contextmanager
def serve(kube: FakeKube, *, tls: ssl.SSLContext | None = None) -> Iterator[str]:
    """Serve `kube` on 127.0.0.1 (a free port), over HTTPS with `tls`, and yield its base URL; the server
    stops afterwards."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(kube))
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()
