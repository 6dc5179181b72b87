"""Reading a file (plain or gzip) as UTF-8 lines within the bounds of `LimitsConfig`.

Every byte read is counted: a file whose decompressed size passes `max_decompressed_bytes`, a
gzip stream expanding more than `max_compression_ratio` times (real exposition compresses 30-90x,
a file of newlines about 1,000x), or a line longer than `max_line_length` is refused as soon as the
bound is passed, so neither a gzip bomb nor a 2 GB single line is ever held in memory. A UTF-8
byte-order mark at the start is skipped.
"""

from __future__ import annotations

import codecs
import zlib
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from io import BufferedIOBase
from pathlib import Path
from typing import cast

from isal import igzip, isal_zlib

from gpusteward.config.limits import LimitsConfig
from gpusteward.errors import InputError

CHUNK = 1 << 22
PEEK = 1 << 16
RATIO_AFTER = 4 << 20  # the ratio is judged once this much is decompressed: small files vary
BOM = "\ufeff"
_ISAL_ERROR = cast("type[Exception]", isal_zlib.error)  # a class, which isal's stub declares as an instance
CORRUPT = (EOFError, OSError, zlib.error, _ISAL_ERROR)
"""What reading a truncated or corrupt gzip stream raises."""


@dataclass
class _Stream:
    raw: BufferedIOBase
    compressed: BufferedIOBase | None  # the file under a gzip stream, for the ratio


def open_stream(path: Path, stack: ExitStack) -> BufferedIOBase:
    """The file's bytes, decompressed when it starts with gzip's magic bytes."""
    return _open(path, stack).raw


def _open(path: Path, stack: ExitStack) -> _Stream:
    f = stack.enter_context(path.open("rb"))
    magic = f.read(2)
    f.seek(0)
    if magic == b"\x1f\x8b":
        # ISA-L's inflate: a day of one cluster's DCGM dump (159 MB of text) in 0.05 s of CPU, against the
        # standard library's 0.16-0.19 s (docs/performance.md, "Gzip").
        inflated = igzip.IGzipFile(fileobj=f, mode="rb")  # type: ignore[no-untyped-call]  # isal leaves it unannotated
        return _Stream(stack.enter_context(inflated), f)
    return _Stream(f, None)


def head_text(path: Path, size: int = PEEK) -> str:
    """The first `size` bytes as text (undecodable bytes replaced, a byte-order mark dropped)."""
    with ExitStack() as stack:
        data = open_stream(path, stack).read(size)
    return data.decode("utf-8", errors="replace").removeprefix(BOM)


def lines(path: Path, source: str, limits: LimitsConfig) -> Iterator[list[str]]:
    """The file's lines (without newlines) in batches, decoding UTF-8 as a stream."""
    decoder = codecs.getincrementaldecoder("utf-8-sig")()
    carry = ""
    done = 0  # lines yielded so far
    total = 0  # decompressed bytes read
    with ExitStack() as stack:
        stream = _open(path, stack)
        while True:
            try:
                data = stream.raw.read(CHUNK)
            except CORRUPT as exc:
                raise InputError(source, f"truncated or corrupt compressed data ({exc})", line=done + 1) from None
            total += len(data)
            _check_size(source, total, stream, limits, done + 1)
            try:
                text = carry + decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:
                line = done + data[: max(exc.start, 0)].count(b"\n") + 1
                raise InputError(source, f"not UTF-8 text ({exc.reason})", line=line) from None
            if not data:
                if text:
                    _check_line(source, text, limits, done + 1)
                    yield text.split("\n")
                return
            cut = text.rfind("\n")
            if cut < 0:
                _check_line(source, text, limits, done + 1)
                carry = text
                continue
            batch = text[:cut].split("\n")
            carry = text[cut + 1 :]
            _check_line(source, carry, limits, done + len(batch) + 1)
            done += len(batch)
            yield batch


def _check_line(source: str, partial: str, limits: LimitsConfig, lineno: int) -> None:
    if len(partial) > limits.max_line_length:
        raise InputError(
            source, f"line longer than {limits.max_line_length} characters (limits.max_line_length)", line=lineno
        )


def _check_size(source: str, total: int, stream: _Stream, limits: LimitsConfig, lineno: int) -> None:
    if total > limits.max_decompressed_bytes:
        raise InputError(
            source,
            f"more than {limits.max_decompressed_bytes} bytes of text (limits.max_decompressed_bytes)",
            line=lineno,
        )
    if stream.compressed is not None and total >= RATIO_AFTER:
        ratio = total / max(stream.compressed.tell(), 1)
        if ratio > limits.max_compression_ratio:
            raise InputError(
                source,
                f"gzip expands {ratio:.0f} times, more than {limits.max_compression_ratio:g}"
                " (limits.max_compression_ratio): a compression bomb, or a file of blank lines",
                line=lineno,
            )
