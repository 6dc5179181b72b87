"""Fuzz targets for the service's two doors: its import folder and its control API.

`import_folder` drops hostile files (hostile names, mutated real inputs, gzip or not) beside one good
DCGM file into a fresh folder of a shared warehouse and runs the service's folder import on it.
The invariants: the job never raises, the good file is stored, every hostile file ends as read or
quarantined (recorded, so a later cycle skips it), and a second cycle reads nothing again.

`control_api` sends one raw, hostile HTTP request to a running control API. The invariants: a
request with a request line gets an answer with a status line and a JSON body, never a 5xx, never
a dropped connection; a refused request is never acted on; the server keeps serving.
"""

from __future__ import annotations

import gzip
import json
import socket
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from pathlib import Path

from hypothesis import strategies as st

from service.metrics import ServiceMetrics
from service.tasks import FolderImport, Shared
from tests.badinput import targets
from tests.collectors.synthetic import dcgm_dump
from tests.service.api_rig import ServedApi, served_api
from warehouse import Warehouse, open_warehouse

NOW = datetime(2026, 11, 2, tzinfo=UTC)
GOOD = "good-day.om"
TOKEN = "fuzz-token"

# -- the import folder ----------------------------------------------------------------------------


class InvariantError(AssertionError):
    """An invariant of a service door did not hold."""


@dataclass
class FolderRig:
    """One warehouse shared by every example (migrating one per example would dominate the run)."""

    root: Path
    wh: Warehouse
    examples: int = 0


@contextmanager
def folder_rig() -> Iterator[FolderRig]:
    with tempfile.TemporaryDirectory(prefix="fuzz-import-") as tmp, open_warehouse(Path(tmp) / "w.duckdb") as wh:
        yield FolderRig(Path(tmp), wh)


def import_folder(rig: FolderRig, files: list[tuple[str, bytes]]) -> None:
    rig.examples += 1
    folder = rig.root / f"in-{rig.examples}"
    folder.mkdir()
    (folder / GOOD).write_text(good_day(), encoding="utf-8")
    written = {GOOD}
    for name, content in files:
        if name in written:
            continue
        (folder / name).write_bytes(content)
        written.add(name)
    job = FolderImport("import:fuzz", timedelta(0), [folder], rig.wh, Shared(), ServiceMetrics(), ignore=())
    job.run(NOW)  # raising is the finding
    status = {
        Path(path).name: state
        for path, state in rig.wh.query(
            "SELECT path, status FROM imported_files WHERE path LIKE ?", [f"{folder}/%"]
        ).iter_rows()
    }
    if status.get(GOOD) != "ok":
        raise InvariantError(f"the good file was not stored beside {sorted(written - {GOOD})}: {status}")
    if set(status) != written:
        raise InvariantError(f"files neither read nor quarantined: {sorted(written - set(status))}")
    again = job.run(NOW)
    if not again.detail.startswith("0 files"):
        raise InvariantError(f"a second cycle read files again: {again.detail}")


@cache
def good_day() -> str:
    return dcgm_dump(hosts=1, gpus=2, minutes=3, seed=7)


_stamp = st.tuples(
    st.integers(0, 9999), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99), st.integers(0, 99),
    st.integers(0, 99),
).map(lambda t: "{:04d}{:02d}{:02d}T{:02d}{:02d}{:02d}Z".format(*t))
_safe_name = st.text(
    st.characters(exclude_categories=["Cs"], exclude_characters="/\x00"), min_size=1, max_size=60
).filter(lambda n: n not in {".", ".."} and len(n.encode("utf-8", "surrogatepass")) < 200)
file_names = st.one_of(
    _stamp.map(lambda s: f"assoc-{s}.txt"),
    _stamp.map(lambda s: f"sacct-{s}.json"),
    st.sampled_from(["a.om", "b.om.gz", "c.prom", "d.json", "e.txt", "manifest.json", ".hidden", "x.tmp"]),
    _safe_name,
)


def _sacctmgr_seed() -> str:
    return "Cluster|Account|User|GrpTRES|Priority|\neast|ml||gres/gpu=8|10|\neast|ml|alice||5|\nwest|cv||cpu=4|1|\n"


@st.composite
def hostile_contents(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["exposition", "sacct", "sacctmgr", "bytes"]))
    if kind == "exposition":
        text = draw(targets.exposition_texts)
    elif kind == "sacct":
        text = json.dumps(draw(targets.mutated_json() | targets.json_values))
    elif kind == "sacctmgr":
        text = draw(targets.mutated_text((_sacctmgr_seed(),)))
    else:
        return draw(st.binary(max_size=300))
    data = text.encode("utf-8", "surrogatepass")
    how = draw(st.sampled_from(["plain", "gzip", "gzip-cut", "bom"]))
    if how == "gzip":
        return gzip.compress(data)
    if how == "gzip-cut":
        packed = gzip.compress(data)
        return packed[: draw(st.integers(0, len(packed)))]
    if how == "bom":
        return b"\xef\xbb\xbf" + data
    return data


hostile_files = st.lists(st.tuples(file_names, hostile_contents()), min_size=1, max_size=3)


# -- the control API ------------------------------------------------------------------------------


ApiRig = ServedApi


@contextmanager
def api_rig(read_timeout_s: float = 0.3) -> Iterator[ApiRig]:
    with served_api({"fuzz": TOKEN}, read_timeout_s=read_timeout_s) as served:
        yield served


def control_api(rig: ApiRig, request: bytes) -> None:
    before = len(rig.controller.acted)
    with socket.create_connection(("127.0.0.1", rig.port), timeout=10) as sock:
        try:
            sock.sendall(request)
            sock.shutdown(socket.SHUT_WR)
        except OSError:  # EPIPE, ECONNRESET, ENOTCONN: the server answered and closed before taking it all
            pass  # read its answer
        chunks = []
        try:
            while chunk := sock.recv(65536):
                chunks.append(chunk)
        except ConnectionResetError:
            pass  # closed with our unread bytes still queued; what arrived before counts
    answer = b"".join(chunks)
    if not rig.thread.is_alive():
        raise InvariantError("the server thread died")
    if not request.split(b"\n", 1)[0].strip():
        return  # no request line: closing without an answer is right
    if not answer.startswith(b"HTTP/1."):
        raise InvariantError(f"no status line in the answer: {answer[:200]!r}")
    status = int(answer.split(b" ", 2)[1])
    head, _, body = answer.partition(b"\r\n\r\n")
    if b"application/json" not in head.lower() and status >= 400:
        raise InvariantError(f"a {status} without a JSON body: {answer[:300]!r}")
    if status >= 500 and status not in {501, 505}:  # a method or an HTTP version it does not speak
        raise InvariantError(f"a {status}: {body[:300]!r}")
    if status >= 400 and len(rig.controller.acted) != before:
        raise InvariantError(f"a refused request ({status}) was acted on")
    if b"application/json" in head.lower():
        json.loads(body)  # raises: the finding


_PATHS = (
    "/api/v1/reviews",
    "/api/v1/plans/2026-10-abc/approve",
    "/api/v1/plans/x/reject",
    "/api/v1/alerts/0123456789abcdef/silence",
    "/api/v1/alerts/0123456789abcdef/acknowledge",
    "/api/v1/quarantine/retry",
    "/metrics",
    "/healthz",
    "/nope",
)
_json_bodies = st.one_of(
    st.fixed_dictionaries(
        {},
        optional={
            "month": st.text(max_size=10) | st.sampled_from(["2026-13", "2026-00", "0000-01", "2026-10"]),
            "minutes": st.integers(-(2**70), 2**90) | st.floats() | st.booleans() | st.none(),
            "reason": st.text(max_size=20) | st.integers(),
            "path": st.text(max_size=20) | st.integers() | st.none(),
        },
    ),
    targets.json_values,
).map(lambda v: json.dumps(v).encode())
_bodies = st.one_of(
    _json_bodies,
    st.binary(max_size=200),
    st.integers(1, 5000).map(lambda n: b'{"month": ' + b"[" * n + b"]" * n + b"}"),
    st.just(b"NaN"),
)


@st.composite
def raw_requests(draw: st.DrawFn) -> bytes:
    method = draw(st.sampled_from(["POST", "POST", "POST", "GET", "PUT", "DELETE", "P\x00ST", ""]))
    path = draw(st.sampled_from(_PATHS) | st.text(max_size=30).map(lambda t: "/" + t.replace(" ", "")))
    version = draw(st.sampled_from(["HTTP/1.1", "HTTP/1.1", "HTTP/1.0", "HTTP/9.9", "HTTP/1.1 extra", ""]))
    body = draw(_bodies)
    length = draw(
        st.one_of(
            st.just(str(len(body))),
            st.just(str(len(body))),
            st.integers(-5, 2**70).map(str),
            st.sampled_from(["abc", "-1", "1e3", "0x10", "", " 5", "²"]),
        )
    )
    headers = ["Host: x", f"Content-Length: {length}"]
    if draw(st.booleans()):
        headers.append(f"Authorization: Bearer {draw(st.sampled_from([TOKEN, TOKEN, 'guess', '']))}")
    if draw(st.booleans()):
        headers.append("Connection: close")
    if draw(st.integers(0, 9)) == 0:
        headers.append("Transfer-Encoding: chunked")
    headers += draw(st.lists(st.text(max_size=20).map(lambda t: "X-" + t.replace("\r", "").replace("\n", "")),
                             max_size=2))
    line = " ".join(part for part in (method, path, version) if part)
    text = line + "\r\n" + "\r\n".join(headers) + "\r\n\r\n"
    return text.encode("utf-8", "surrogatepass") + body
