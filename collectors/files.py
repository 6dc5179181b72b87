"""Read one file of any supported kind into a `CollectedBatch`, and order files for an import.

The kind comes from the content: JSON is `sacct --json`; a `JobID|JobIDRaw|...` header is a
`sacct -P` dump (`collectors.slurm.sacct_text`); a `Cluster|Account|...` header is
`sacctmgr -P show assoc`; exposition text whose first recognised samples are `DCGM_FI_*` (or 1.x
`dcgm_*`) is DCGM, a metric an inference mapping knows (vLLM, SGLang, TGI, Triton, gateways) is
inference. Exposition is OpenMetrics when the name says so (`.om`,
`.openmetrics`) or the head has `# EOF` or `# UNIT`; otherwise the text format 0.0.4. gzip is
detected by its magic bytes and read as a stream. Text-format samples without timestamps take the
file's modification time.
"""

from __future__ import annotations

import codecs
import gzip
import re
import zlib
from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from datetime import UTC, datetime
from io import BufferedIOBase
from pathlib import Path

from collectors.batch import CollectedBatch, Problem
from collectors.dcgm import gpu_minutes
from collectors.exposition import ExpositionParser
from collectors.inference import WindowState, inference_windows
from collectors.inference_mappings import DEFAULT_INDEX, MappingIndex
from collectors.sacct import load_json, read_sacct
from collectors.sacctmgr import read_assoc_tree, snapshot_time
from collectors.samples import Samples
from collectors.slurm.sacct_text import is_sacct_text, read_sacct_text
from gpusteward.errors import InputError

KINDS = ("sacctmgr", "sacct", "sacct_text", "dcgm", "inference")  # the import order: quotas, jobs, GPUs, services
_CHUNK = 1 << 22
_PEEK = 1 << 16
_DATE = re.compile(r"(\d{4})-?(\d{2})(?:-?(\d{2}))?(?:T(\d{2})(\d{2})(\d{2})Z?)?")


def read_file(
    path: Path,
    *,
    inference_state: WindowState | None = None,
    default_cluster: str = "default",
    mappings: MappingIndex = DEFAULT_INDEX,
) -> CollectedBatch:
    """Read `path` (gzip or plain). Raises InputError naming the file and line for bad input.

    `mappings`: the inference mappings (built-ins plus the config's: `mapping_index(config)`).
    """
    source = str(path)
    batch = CollectedBatch(source=source)
    kind = detect_kind(path, mappings=mappings)
    if kind == "sacct":
        text = "\n".join(line for lines in _batches(path, source) for line in lines)
        jobs, events, problems = read_sacct(load_json(text, source=source), source=source)
        batch.add("jobs", jobs)
        batch.add("job_events", events)
        batch.problems.extend(problems)
    elif kind == "sacct_text":
        lines = (line for lines in _batches(path, source) for line in lines)
        jobs, events, problems = read_sacct_text(lines, source=source)
        batch.add("jobs", jobs)
        batch.add("job_events", events)
        batch.problems.extend(problems)
    elif kind == "sacctmgr":
        ts = snapshot_time(path.name)
        if ts is None:
            ts = _mtime(path)
            batch.problems.append(Problem(source, "no snapshot time in the file name; used the file's mtime"))
        lines = (line for lines in _batches(path, source) for line in lines)
        snapshots, tree = read_assoc_tree(lines, ts=ts, source=source)
        batch.add("quota_snapshots", snapshots)
        batch.add("account_tree", tree)
    elif kind in ("dcgm", "inference"):
        samples = _parse_exposition(path, source, openmetrics=_is_openmetrics(path))
        scrape_ms = int(path.stat().st_mtime * 1000)
        if kind == "dcgm":
            frame, problems = gpu_minutes(
                samples, default_cluster=default_cluster, source=source, scrape_ts_ms=scrape_ms
            )
            batch.add("gpu_minutes", frame)
        else:
            frame, problems = inference_windows(
                samples,
                default_cluster=default_cluster,
                source=source,
                state=inference_state,
                scrape_ts_ms=scrape_ms,
                mappings=mappings,
            )
            batch.add("inference_windows", frame)
        batch.problems.extend(problems)
    else:
        kinds = "DCGM or vLLM metrics, sacct JSON or -P, sacctmgr"
        raise InputError(source, f"not a kind of file GPU Steward reads ({kinds})")
    return batch


def sort_for_import(paths: Iterable[Path], *, mappings: MappingIndex = DEFAULT_INDEX) -> list[Path]:
    """A stable import order: by kind (quotas, jobs, GPUs, services), then by the time in the file
    name, so that each vLLM replica's day files are read in order."""

    def key(path: Path) -> tuple[int, str, str]:
        try:
            kind = detect_kind(path, mappings=mappings)
        except (InputError, OSError):
            kind = None
        rank = KINDS.index(kind) if kind in KINDS else len(KINDS)
        return rank, _time_key(path.name), str(path)

    return sorted(paths, key=key)


def detect_kind(path: Path, *, mappings: MappingIndex = DEFAULT_INDEX) -> str | None:
    """The kind of file (one of `KINDS`) from its first 64 KiB of content, or None."""
    with ExitStack() as stack:
        raw = _open(path, stack)
        try:
            head = raw.read(_PEEK).decode("utf-8", errors="replace")
        except (EOFError, OSError, zlib.error):
            return None
    return kind_of(head, mappings=mappings)


def kind_of(head: str, *, mappings: MappingIndex = DEFAULT_INDEX) -> str | None:
    text = head.lstrip()
    if text.startswith(("{", "[")):
        return "sacct"
    first = text.split("\n", 1)[0].rstrip("\r").split("|")
    if is_sacct_text(text.split("\n", 1)[0]):
        return "sacct_text"
    if "Cluster" in first and "Account" in first:
        return "sacctmgr"
    for line in text.split("\n"):
        if not line or line[0] == "#":
            continue
        name = line.partition("{")[0].partition(" ")[0]
        if name.startswith(("DCGM_FI_", "dcgm_")):
            return "dcgm"
        if mappings.knows(name):
            return "inference"
    return None


def _is_openmetrics(path: Path) -> bool:
    suffixes = [s.lower() for s in path.suffixes]
    if ".om" in suffixes or ".openmetrics" in suffixes:
        return True
    with ExitStack() as stack:
        head = _open(path, stack).read(_PEEK).decode("utf-8", errors="replace")
    return "\n# EOF" in "\n" + head or "\n# UNIT " in "\n" + head


def _parse_exposition(path: Path, source: str, *, openmetrics: bool) -> Samples:
    parser = ExpositionParser(source, openmetrics=openmetrics)
    for lines in _batches(path, source):
        parser.feed(lines)
    return parser.close()


def _open(path: Path, stack: ExitStack) -> BufferedIOBase:
    f = stack.enter_context(path.open("rb"))
    magic = f.read(2)
    f.seek(0)
    if magic == b"\x1f\x8b":
        return stack.enter_context(gzip.GzipFile(fileobj=f, mode="rb"))
    return f


def _batches(path: Path, source: str) -> Iterator[list[str]]:
    """The file's lines (without newlines) in batches, decoding UTF-8 as a stream."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    carry = ""
    done = 0  # lines yielded so far
    with ExitStack() as stack:
        raw = _open(path, stack)
        while True:
            try:
                data = raw.read(_CHUNK)
            except (EOFError, OSError, zlib.error) as exc:
                raise InputError(source, f"truncated or corrupt compressed data ({exc})", line=done + 1) from None
            try:
                text = carry + decoder.decode(data, final=not data)
            except UnicodeDecodeError as exc:
                line = done + data[: max(exc.start, 0)].count(b"\n") + 1
                raise InputError(source, f"not UTF-8 text ({exc.reason})", line=line) from None
            if not data:
                if text:
                    yield text.split("\n")
                return
            cut = text.rfind("\n")
            if cut < 0:
                carry = text
                continue
            lines = text[:cut].split("\n")
            carry = text[cut + 1 :]
            done += len(lines)
            yield lines


def _time_key(name: str) -> str:
    m = _DATE.search(name)
    if m is None:
        return ""
    year, month, day, hh, mm, ss = m.groups()
    return f"{year}{month}{day or '00'}T{hh or '00'}{mm or '00'}{ss or '00'}"


def _mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(tzinfo=None)
