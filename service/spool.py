"""The collection spool: what a scrape read, made durable before anyone waits for the warehouse.

A collection job appends its batch here and the append returns (acknowledges) only after the batch
is on disk: written to `<id>.partial`, fsynced, renamed to `<id>.batch`, and the folder fsynced, so
a crash at any point leaves either a complete, checksummed batch or a `.partial` that was never
acknowledged (deleted when the spool opens again). The single writer drains the batches into the
warehouse in name order; the warehouse records each batch id in the transaction that stores its
rows (migration 024), so a batch replayed after a crash between that commit and the file's removal
is recognised and removed, never stored twice.

A batch file: MAGIC, header length (u32), payload length (u64), SHA-256 of header and payload, the
JSON header (id, source, collection time, problems, each table's byte length), then each table as
an Arrow IPC file. A file whose framing or checksum does not hold (a disk that lied about fsync,
bit rot) is moved to `corrupt/` and reported, never read as data.
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
import os
import struct
import threading
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import polars as pl

from collectors.batch import CollectedBatch

log = logging.getLogger("gpusteward.service")

MAGIC = b"GSSPOOL1"
_FRAME = struct.Struct(">IQ32s")  # header length, payload length, SHA-256 of header + payload
BATCH = ".batch"
PARTIAL = ".partial"
CORRUPT = "corrupt"


class SpoolCorruptError(ValueError):
    """A batch file whose framing or checksum does not hold."""


@dataclass(frozen=True)
class SpooledBatch:
    """One acknowledged batch as read back from the spool."""

    batch_id: str
    source: str
    collected_at: datetime
    frames: Mapping[str, pl.DataFrame]
    problems: tuple[str, ...]
    path: Path


@dataclass
class Spool:
    """An append-only folder of batch files; appends are safe from several threads, draining is one reader's."""

    folder: Path
    fsync: bool = True  # False only for benches that measure what the spool costs
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _last_ns: int = 0
    dropped_partial: int = 0  # torn writes found when the spool opened
    moved_corrupt: int = 0

    def __post_init__(self) -> None:
        self.folder.mkdir(parents=True, exist_ok=True)
        for torn in sorted(self.folder.glob(f"*{PARTIAL}")):  # never acknowledged: the append did not return
            torn.unlink()
            self.dropped_partial += 1
        if self.dropped_partial:
            log.warning("spool %s: dropped %d unfinished batch file(s) of a crash", self.folder, self.dropped_partial)
            self._sync_folder()

    def append(self, batch: CollectedBatch, collected_at: datetime) -> str:
        """Write `batch` durably and return its id; when this returns, the batch survives a crash."""
        batch_id = self._next_id()
        header: dict[str, object] = {
            "id": batch_id,
            "source": batch.source,
            "collected_at": collected_at.isoformat(),
            "problems": [str(p) for p in batch.problems],
        }
        body = encode(header, batch.frames)
        partial = self.folder / f"{batch_id}{PARTIAL}"
        with partial.open("wb") as out:
            out.write(body)
            out.flush()
            if self.fsync:
                os.fsync(out.fileno())
        partial.replace(self.folder / f"{batch_id}{BATCH}")
        self._sync_folder()
        return batch_id

    def pending(self) -> list[Path]:
        """Acknowledged batches not yet drained, oldest first."""
        return sorted(self.folder.glob(f"*{BATCH}"))

    def depth(self) -> int:
        return len(self.pending())

    def read(self, path: Path) -> SpooledBatch:
        """The batch in `path`; raises SpoolCorruptError when its framing or checksum does not hold."""
        header, frames = decode(path.read_bytes(), str(path))
        problems = header.get("problems")
        return SpooledBatch(
            batch_id=str(header["id"]),
            source=str(header["source"]),
            collected_at=datetime.fromisoformat(str(header["collected_at"])),
            frames=frames,
            problems=tuple(str(p) for p in problems) if isinstance(problems, list) else (),
            path=path,
        )

    def remove(self, path: Path) -> None:
        """The batch is stored (its id is in the warehouse): drop its file."""
        path.unlink(missing_ok=True)
        self._sync_folder()

    def quarantine(self, path: Path, reason: str) -> Path:
        """Move a corrupt batch aside, so it is neither read as data nor retried forever."""
        target = self.folder / CORRUPT / path.name
        target.parent.mkdir(exist_ok=True)
        path.replace(target)
        self._sync_folder()
        self.moved_corrupt += 1
        log.error("spool %s: %s moved to %s: %s", self.folder, path.name, target.parent, reason)
        return target

    def _next_id(self) -> str:
        # Names sort in append order (nanoseconds, never repeating in this process); the random part keeps
        # ids unique across restarts, so a new batch can never be mistaken for one the warehouse stored.
        with self._lock:
            self._last_ns = max(time.time_ns(), self._last_ns + 1)
            stamp = self._last_ns
        return f"{stamp:020d}-{uuid.uuid4().hex[:16]}"

    def _sync_folder(self) -> None:
        if not self.fsync:
            return
        fd = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def spool_beside(warehouse: str | Path) -> Path:
    """The default spool of a warehouse file: `<file>.spool/` beside it."""
    path = Path(warehouse)
    return path.with_name(path.name + ".spool")


def encode(header: dict[str, object], frames: Mapping[str, pl.DataFrame]) -> bytes:
    """A batch file's bytes: framing, checksum, header and one Arrow IPC file per table."""
    parts: list[bytes] = []
    tables: list[list[object]] = []
    for name, frame in frames.items():
        buffer = io.BytesIO()
        frame.write_ipc(buffer)
        parts.append(buffer.getvalue())
        tables.append([name, len(parts[-1])])
    head = json.dumps({**header, "tables": tables}, separators=(",", ":")).encode()
    payload = b"".join(parts)
    digest = hashlib.sha256(head + payload).digest()
    return MAGIC + _FRAME.pack(len(head), len(payload), digest) + head + payload


def decode(data: bytes, where: str) -> tuple[dict[str, object], dict[str, pl.DataFrame]]:
    """The header and frames of a batch file's bytes; SpoolCorruptError when anything does not add up."""
    start = len(MAGIC) + _FRAME.size
    if len(data) < start or not data.startswith(MAGIC):
        raise SpoolCorruptError(f"{where}: not a spool batch (too short or wrong magic)")
    head_len, payload_len, digest = _FRAME.unpack_from(data, len(MAGIC))
    if len(data) != start + head_len + payload_len:
        raise SpoolCorruptError(f"{where}: {len(data)} bytes, the framing says {start + head_len + payload_len} (torn)")
    body = data[start:]
    if hashlib.sha256(body).digest() != digest:
        raise SpoolCorruptError(f"{where}: checksum mismatch")
    header = json.loads(body[:head_len])
    frames: dict[str, pl.DataFrame] = {}
    offset = head_len
    for name, size in header.pop("tables"):
        frames[str(name)] = pl.read_ipc(io.BytesIO(body[offset : offset + size]))
        offset += size
    return header, frames
