"""`sacctmgr -P show assoc format=Cluster,Account,User,GrpTRES,Priority` -> QUOTA_SNAPSHOTS.

Only account rows (an empty User) are snapshots: kind "account", `gpu_limit` from `gres/gpu=N` in
GrpTRES (absent means unlimited: null), Priority as printed (empty: null). Columns are found by the
header line, in any order; a trailing `|` (`sacctmgr -p`) is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from datetime import datetime

import polars as pl

from gpusteward import tables
from gpusteward.errors import InputError

_REQUIRED = ("Cluster", "Account", "User", "GrpTRES")
_GPU = re.compile(r"(?:^|,)gres/gpu=(\d+)(?:,|$)")
_STAMP = re.compile(r"(\d{8}T\d{6}Z)")


def snapshot_time(name: str, *, source: str | None = None) -> datetime | None:
    """The time in a file name such as `assoc-20261101T000000Z.txt` (naive UTC), if any.

    Raises InputError naming `source` (default: `name`) when that time is not a real one."""
    m = _STAMP.search(name)
    if m is None:
        return None
    try:
        return datetime.strptime(m.group(1), "%Y%m%dT%H%M%SZ")
    except ValueError:
        raise InputError(
            source or name, f"the snapshot time {m.group(1)} in the file name is not a valid date and time (UTC)"
        ) from None


def read_assoc(lines: Iterable[str], *, ts: datetime, source: str) -> pl.DataFrame:
    """QUOTA_SNAPSHOTS rows at time `ts` for the account associations in `lines`."""
    it = iter(enumerate(lines, start=1))
    header: list[str] | None = None
    rows: list[tuple[object, ...]] = []
    for lineno, raw in it:
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        fields = line.split("|")
        if header is None:
            header = _header(fields, source, lineno)
            continue
        if len(fields) == len(header) + 1 and fields[-1] == "":
            fields.pop()
        if len(fields) != len(header):
            problem = f"expected {len(header)} fields separated by '|', found {len(fields)}"
            raise InputError(source, problem, line=lineno)
        row = dict(zip(header, fields, strict=True))
        if row["User"]:
            continue
        rows.append(
            (row["Cluster"], ts, "account", row["Account"], _gpu_limit(row["GrpTRES"]), _priority(row, source, lineno))
        )
    if header is None:
        raise InputError(source, "empty: expected a 'Cluster|Account|User|GrpTRES|...' header", line=1)
    if not rows:
        return tables.empty(tables.QUOTA_SNAPSHOTS)
    return pl.DataFrame(rows, schema=tables.QUOTA_SNAPSHOTS, orient="row")


def _header(fields: list[str], source: str, lineno: int) -> list[str]:
    if fields and fields[-1] == "":
        fields = fields[:-1]
    missing = [name for name in _REQUIRED if name not in fields]
    if missing:
        raise InputError(source, f"header lacks {', '.join(missing)}: not sacctmgr -P show assoc output", line=lineno)
    return fields


def _gpu_limit(grp_tres: str) -> int | None:
    m = _GPU.search(grp_tres)
    return int(m.group(1)) if m else None


def _priority(row: dict[str, str], source: str, lineno: int) -> int | None:
    text = row.get("Priority", "")
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise InputError(source, f"Priority {text!r} is not a number", line=lineno) from None
