"""The minute digest stored as Parquet beside a month's export: what the Spark job (spark_job.py)
writes on a cluster and `gpusteward evaluate --digest` reads back (docs/scale.md).

Layout under the root (the export's, by default):

    minute_digest/month=2026-10/job_days/part-*.parquet      (and gpus, host_silences, gaps, idle_runs:
                                                             the output statements' rows as Spark wrote them)
    minute_digest/month=2026-10/window/part-*.parquet        one row: the window and idle settings digested
                                                             and `finished`, false while the job writes, true
                                                             once every output is in

Minutes stay integers as the statements hand them out; statements.to_digest turns the frames into
the evaluation's `MinuteDigest`, exactly as for a digest collected from a Spark session directly.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import polars as pl
import pyarrow.dataset as pads
import pyarrow.fs as pafs

from gpusteward.config.schema import IdleConfig
from sla.common import Window
from sla.minute_digest import MinuteDigest
from warehouse.digest.statements import OUTPUTS, minute_of, to_digest

DIGEST_DIR = "minute_digest"
WINDOW = "window"
"""The folder of the one-row table saying what was digested; written after every output."""

_EPOCH = datetime(1970, 1, 1)


def digest_folder(root: str, month_label: str) -> str:
    """Where the digest of `month_label` (`YYYY-MM`) lives under `root` (a folder or URL)."""
    return f"{root.rstrip('/')}/{DIGEST_DIR}/month={month_label}"


def window_row(window: Window, idle: IdleConfig, month_label: str) -> dict[str, Any]:
    """The WINDOW table's row for a digest of `window` with `idle` (the job adds `finished`)."""
    return {
        "month": month_label,
        "window_start_minute": minute_of(window.start),
        "window_end_minute": minute_of(window.end),
        "timezone": window.tz,
        "util_below": float(idle.util_below),
        "min_minutes": int(idle.min_minutes),
        "held_memory_mib": float(idle.held_memory_mib),
    }


def _filesystem(root: str) -> tuple[pafs.FileSystem, str]:
    """pyarrow's file system for `root`; Hadoop's `s3a://` (Spark's name for S3) is pyarrow's `s3://`."""
    if "://" not in root:
        return pafs.LocalFileSystem(), root
    if root.startswith("s3a://"):
        root = "s3://" + root.removeprefix("s3a://")
    fs, path = pafs.FileSystem.from_uri(root)
    return fs, str(path)


def _read(fs: pafs.FileSystem, path: str) -> pl.DataFrame:
    # Spark's _SUCCESS and .crc files start with "_" and ".": pyarrow's dataset skips them.
    return pl.from_arrow(pads.dataset(path, filesystem=fs, format="parquet").to_table())  # type: ignore[return-value]


def read_digest(root: str, month_label: str) -> MinuteDigest:
    """The digest of `month_label` stored under `root` by the Spark job.

    Raises FileNotFoundError when there is none, or when its job has not finished writing it (the
    WINDOW table is written last)."""
    fs, base = _filesystem(root)
    folder = digest_folder(base, month_label)
    if fs.get_file_info(f"{folder}/{WINDOW}").type == pafs.FileType.NotFound:
        raise FileNotFoundError(
            f"{digest_folder(root, month_label)} holds no finished digest: run the Spark job "
            f"(python -m warehouse.digest.spark_job --export ... --month {month_label}) and let it finish"
        )
    meta = _read(fs, f"{folder}/{WINDOW}")
    if meta.height != 1 or not meta.row(0, named=True).get("finished"):
        raise FileNotFoundError(
            f"{digest_folder(root, month_label)} holds no finished digest: its Spark job stopped before the end "
            "or is still writing; run it again and let it finish"
        )
    row = meta.row(0, named=True)
    window = Window(
        _EPOCH + timedelta(minutes=int(row["window_start_minute"])),
        _EPOCH + timedelta(minutes=int(row["window_end_minute"])),
        str(row["timezone"]),
    )
    idle = IdleConfig(
        util_below=float(row["util_below"]),
        min_minutes=int(row["min_minutes"]),
        held_memory_mib=float(row["held_memory_mib"]),
    )
    frames = {name: _read(fs, f"{folder}/{name}") for name in OUTPUTS}
    return to_digest(frames, window, idle)
