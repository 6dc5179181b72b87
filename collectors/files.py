"""Read one file of any supported kind into a `CollectedBatch`, and order files for an import.

The kind comes from the content: JSON whose job records carry `job_state` is slurmctld's view
(`squeue --json`, slurmrestd `/jobs`: pending snapshots, `collectors.slurm.squeue_file`), other
JSON is `sacct --json`; a `JobID|JobIDRaw|...` header is a
`sacct -P` dump (`collectors.slurm.sacct_text`); a `Cluster|Account|...` header is
`sacctmgr -P show assoc`; exposition text whose first recognised samples are `DCGM_FI_*` (or 1.x
`dcgm_*`) is DCGM, a metric an inference mapping knows (vLLM, SGLang, TGI, Triton, gateways) is
inference. Exposition is OpenMetrics when the name says so (`.om`,
`.openmetrics`) or the head has `# EOF` or `# UNIT`; otherwise the text format 0.0.4. gzip is
detected by its magic bytes and read as a stream, within the bounds of `LimitsConfig`
(collectors/bounded.py). Text-format samples without timestamps take the file's modification time.
A file of no known kind is refused saying why (empty, only comments, or its first metric).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from collectors import bounded
from collectors.batch import CollectedBatch, Problem
from collectors.dcgm import gpu_minutes
from collectors.exposition import ExpositionParser
from collectors.inference import WindowState, inference_windows
from collectors.inference_mappings import DEFAULT_INDEX, MappingIndex
from collectors.plausible import TimeWindow
from collectors.sacct import load_json, read_sacct
from collectors.sacctmgr import read_assoc_tree, snapshot_time
from collectors.samples import Samples
from collectors.slurm.sacct_text import is_sacct_text, read_sacct_text
from collectors.slurm.squeue_file import is_live_jobs, read_squeue
from gpusteward.config.limits import DEFAULT_LIMITS, LimitsConfig
from gpusteward.errors import InputError

# the import order: quotas, jobs, queues, GPUs, services
KINDS = ("sacctmgr", "sacct", "sacct_text", "squeue", "dcgm", "inference")
_DATE = re.compile(r"(\d{4})-?(\d{2})(?:-?(\d{2}))?(?:T(\d{2})(\d{2})(\d{2})Z?)?")


def read_file(
    path: Path,
    *,
    inference_state: WindowState | None = None,
    default_cluster: str = "default",
    mappings: MappingIndex = DEFAULT_INDEX,
    limits: LimitsConfig = DEFAULT_LIMITS,
    now: datetime | None = None,
) -> CollectedBatch:
    """Read `path` (gzip or plain). Raises InputError naming the file and line for bad input.

    `mappings`: the inference mappings (built-ins plus the config's: `mapping_index(config)`).
    `limits`: the bounds of the input and of its sample times, which are judged against `now`
    (the wall clock when None).
    """
    source = str(path)
    batch = CollectedBatch(source=source)
    kind, why = _kind_and_reason(path, mappings, limits)
    if kind == "sacct":
        text = "\n".join(line for lines in bounded.lines(path, source, limits) for line in lines)
        jobs, events, problems = read_sacct(load_json(text, source=source), source=source)
        batch.add("jobs", jobs)
        batch.add("job_events", events)
        batch.problems.extend(problems)
    elif kind == "sacct_text":
        lines = (line for lines in bounded.lines(path, source, limits) for line in lines)
        jobs, events, problems = read_sacct_text(lines, source=source)
        batch.add("jobs", jobs)
        batch.add("job_events", events)
        batch.problems.extend(problems)
    elif kind == "squeue":
        lines = (line for lines in bounded.lines(path, source, limits) for line in lines)
        fallback = snapshot_time(path.name, source=source) or _mtime(path)
        pending, problems = read_squeue(lines, source=source, default_cluster=default_cluster, fallback_ts=fallback)
        batch.add("pending_jobs", pending)
        batch.problems.extend(problems)
    elif kind == "sacctmgr":
        ts = snapshot_time(path.name, source=source)
        if ts is None:
            ts = _mtime(path)
            batch.problems.append(Problem(source, "no snapshot time in the file name; used the file's mtime"))
        lines = (line for lines in bounded.lines(path, source, limits) for line in lines)
        snapshots, tree = read_assoc_tree(lines, ts=ts, source=source)
        batch.add("quota_snapshots", snapshots)
        batch.add("account_tree", tree)
    elif kind in ("dcgm", "inference"):
        openmetrics = _is_openmetrics(path)
        samples = _parse_exposition(path, source, openmetrics=openmetrics, limits=limits)
        scrape_ms = int(path.stat().st_mtime * 1000)
        window = TimeWindow.around(now or datetime.now(UTC), limits, openmetrics=openmetrics)
        if kind == "dcgm":
            frame, problems = gpu_minutes(
                samples, default_cluster=default_cluster, source=source, scrape_ts_ms=scrape_ms, window=window
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
                window=window,
            )
            batch.add("inference_windows", frame)
        batch.problems.extend(problems)
    else:
        kinds = "DCGM or vLLM metrics, sacct JSON or -P, squeue JSON, sacctmgr"
        raise InputError(source, f"not a kind of file GPU Steward reads ({kinds}): {why}")
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


def detect_kind(
    path: Path, *, mappings: MappingIndex = DEFAULT_INDEX, limits: LimitsConfig = DEFAULT_LIMITS
) -> str | None:
    """The kind of file (one of `KINDS`) from its content, or None.

    The first 64 KiB decide; exposition that holds only comments there is read on to its first
    sample line, at most `limits.max_header_bytes` in.
    """
    return _kind_and_reason(path, mappings, limits)[0]


def _kind_and_reason(path: Path, mappings: MappingIndex, limits: LimitsConfig) -> tuple[str | None, str]:
    """The kind, or None and why not."""
    try:
        head = bounded.head_text(path)
    except bounded.CORRUPT as exc:
        return None, f"cannot read its start ({exc})"
    if not head.strip():
        return None, "it is empty"
    kind = kind_of(head, mappings=mappings)
    if kind is not None:
        return kind, ""
    first = _first_sample_name(head)
    if first is None and len(head.encode()) >= bounded.PEEK:
        try:
            first, kind = _first_sample_further(path, mappings, limits)
        except bounded.CORRUPT as exc:
            return None, f"cannot read it ({exc})"
        if kind is not None:
            return kind, ""
        if first is None:
            return None, f"no sample line in its first {limits.max_header_bytes} bytes (limits.max_header_bytes)"
    if first is None:
        return None, "it holds no sample line, only comments"
    return None, f"its first sample is {first[:80]!r}, neither a DCGM field nor a metric of a known inference server"


def _first_sample_name(text: str) -> str | None:
    for line in text.split("\n"):
        stripped = line.strip()
        if stripped and stripped[0] != "#":
            return stripped.partition("{")[0].partition(" ")[0]
    return None


def _first_sample_further(path: Path, mappings: MappingIndex, limits: LimitsConfig) -> tuple[str | None, str | None]:
    """(first sample name, kind) of exposition whose first 64 KiB are comments."""
    text = bounded.head_text(path, limits.max_header_bytes)
    first = _first_sample_name(text)
    if first is None:
        return None, None
    return first, kind_of(text, mappings=mappings)


def kind_of(head: str, *, mappings: MappingIndex = DEFAULT_INDEX) -> str | None:
    text = head.removeprefix(bounded.BOM).lstrip()
    if text.startswith(("{", "[")):
        return "squeue" if is_live_jobs(text) else "sacct"
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
    head = bounded.head_text(path)
    return "\n# EOF" in "\n" + head or "\n# UNIT " in "\n" + head


def _parse_exposition(path: Path, source: str, *, openmetrics: bool, limits: LimitsConfig) -> Samples:
    parser = ExpositionParser(source, openmetrics=openmetrics, limits=limits)
    for lines in bounded.lines(path, source, limits):
        parser.feed(lines)
    return parser.close()


def _time_key(name: str) -> str:
    m = _DATE.search(name)
    if m is None:
        return ""
    year, month, day, hh, mm, ss = m.groups()
    return f"{year}{month}{day or '00'}T{hh or '00'}{mm or '00'}{ss or '00'}"


def _mtime(path: Path) -> datetime:
    return datetime.fromtimestamp(path.stat().st_mtime, UTC).replace(tzinfo=None)
