"""Gzip of a simulated DCGM day: ISA-L (what the simulator writes and the importer reads with) against
the standard library's zlib, both ways, on the same text.

- `deflate`: the simulator's writer (`simulator.write_openmetrics.Gzip`, ISA-L level 0 in blocks of
  1 MiB) against zlib level 1 fed the same blocks (the writer before ISA-L).
- `inflate`: the importer's reader (`collectors.bounded`, ISA-L's `IGzipFile` read 4 MiB at a time)
  against the standard library's `GzipFile`, read the same way, of the same zlib-compressed file.

Full: one day of the demo fleet's 8 nodes (the east cluster's file, 159 MB of text); `--quick`: one
day of 2 nodes. Both readers must give the writer's text back.
"""

from __future__ import annotations

import gzip
import tempfile
import zlib
from contextlib import ExitStack
from datetime import date
from pathlib import Path
from typing import Any

from bench.harness import interleaved
from collectors import bounded
from simulator import simulate
from simulator.write_openmetrics import GZIP_BLOCK, Gzip

READ = 1 << 22


def _zlib_level_1(text: bytes) -> bytes:
    z = zlib.compressobj(1, zlib.DEFLATED, 31)
    parts = [z.compress(text[i : i + GZIP_BLOCK]) for i in range(0, len(text), GZIP_BLOCK)]
    return b"".join([*parts, z.flush()])


def _isal(text: bytes) -> bytes:
    out = Gzip()
    out.write_bytes(text)
    return out.close()


def _read_all(read: Any, keep: bool) -> bytes | int:
    """The text (keep), or only its length: a timed read streams, as the importer does."""
    parts, size = [], 0
    while data := read(READ):
        size += len(data)
        if keep:
            parts.append(data)
    return b"".join(parts) if keep else size


def _read_stdlib(path: Path, keep: bool = False) -> bytes | int:
    with path.open("rb") as f, gzip.GzipFile(fileobj=f, mode="rb") as g:
        return _read_all(g.read, keep)


def _read_ours(path: Path, keep: bool = False) -> bytes | int:
    with ExitStack() as stack:
        return _read_all(bounded.open_stream(path, stack).read, keep)


def run(quick: bool) -> dict[str, Any]:
    nodes, runs = (2, 2) if quick else (8, 5)
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp) / "fleet"
        simulate(folder, date(2026, 10, 1), 1, 7, nodes=nodes,
                 telemetry=lambda path: path == "dcgm/east/2026-10-01.om.gz")
        text = gzip.decompress((folder / "dcgm" / "east" / "2026-10-01.om.gz").read_bytes())
        deflate = interleaved({"zlib_level_1": lambda: _zlib_level_1(text), "isal": lambda: _isal(text)}, runs=runs)
        zlib_file = Path(tmp) / "zlib.om.gz"
        zlib_file.write_bytes(_zlib_level_1(text))
        inflate = interleaved({"stdlib_gzipfile": lambda: _read_stdlib(zlib_file),
                               "isal_igzipfile": lambda: _read_ours(zlib_file)}, runs=runs)
        isal_bytes = _isal(text)
        read_back = _read_ours(zlib_file, True) == _read_stdlib(zlib_file, True) == text
        same = read_back and gzip.decompress(isal_bytes) == text
        sizes = {"text": len(text), "zlib_level_1": zlib_file.stat().st_size, "isal": len(isal_bytes)}
    return {
        "benchmark": "compression",
        "input": f"dcgm/east, one day of {nodes} nodes",
        "bytes": sizes,
        "deflate": {k: t.as_dict() for k, t in deflate.items()},
        "inflate": {k: t.as_dict() for k, t in inflate.items()},
        "deflate_isal_over_zlib": round(deflate["isal"].median_s / deflate["zlib_level_1"].median_s, 3),
        "inflate_isal_over_stdlib": round(inflate["isal_igzipfile"].median_s / inflate["stdlib_gzipfile"].median_s, 3),
        "text_round_trips": same,
    }
