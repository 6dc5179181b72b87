"""`sacctmgr -P show assoc format=Cluster,Account,User,ParentName,GrpTRES,Priority` -> QUOTA_SNAPSHOTS and ACCOUNT_TREE.

Only account rows (an empty User) are read: kind "account", `gpu_limit` from `gres/gpu=N` in GrpTRES
(absent means unlimited: null), Priority as printed (empty: null). Columns are found by the header
line, in any order; a trailing `|` (`sacctmgr -p`) is accepted. With a ParentName column the account
tree is read too (ACCOUNT_TREE): each account's parent and its own limits, so a child can be seen to
wait on its parent's limit.

GrpTRES is read strictly, because a limit misread is a limit lost (null reads as unlimited): a
`gres/gpu` value that is not a whole number from 0 to 2^31-1 (`abc`, `-5`, empty, `4=5`) refuses the
file, naming the line, the account and the field. A typed limit (`gres/gpu:h100=3`) binds, in Slurm
22.05, only the jobs that ask for that type (checked on the real test cluster: an untyped
`--gres=gpu:2` job ran past `gres/gpu:h100=1`, a `--gres=gpu:h100:2` one waited on AssocGrpGRES), so
it is not the account's GPU limit: it is kept in ACCOUNT_TREE's `gpu_type_limits` as printed.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime

import polars as pl

from gpusteward import tables
from gpusteward.errors import InputError

_REQUIRED = ("Cluster", "Account", "User", "GrpTRES")
_STAMP = re.compile(r"(\d{8}T\d{6}Z)")
_COUNT = re.compile(r"\d{1,10}", re.ASCII)
_INT32_MAX = 2**31 - 1
_UINT32_MAX = 2**32 - 1  # Slurm keeps an association's and a QOS's Priority in a uint32


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


@dataclass(frozen=True)
class GpuLimits:
    """An association's GrpTRES GPU limits: the untyped `gres/gpu` count and the typed ones as printed."""

    total: int | None
    typed: str | None


def gpu_limits(grp_tres: str, *, where: str) -> GpuLimits:
    """The GPU limits in a GrpTRES such as `cpu=64,gres/gpu=8,gres/gpu:h100=4`; ValueError names `where`."""
    total: int | None = None
    typed: list[str] = []
    for item in grp_tres.split(",") if grp_tres.strip() else []:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise ValueError(f"{where}: GrpTRES item {item[:40]!r} is not NAME=COUNT")
        if name != "gres/gpu" and not name.startswith("gres/gpu:"):
            continue
        if not _COUNT.fullmatch(value) or int(value) > _INT32_MAX:
            raise ValueError(f"{where}: GrpTRES {name}={value[:40]!r} is not a GPU count (0 to {_INT32_MAX})")
        if name == "gres/gpu":
            total = int(value)
        else:
            typed.append(f"{name[len('gres/gpu:'):]}={int(value)}")
    return GpuLimits(total, ",".join(sorted(typed)) or None)


def read_assoc(lines: Iterable[str], *, ts: datetime, source: str) -> pl.DataFrame:
    """QUOTA_SNAPSHOTS rows at time `ts` for the account associations in `lines`."""
    return read_assoc_tree(lines, ts=ts, source=source)[0]


def pipe_records(
    lines: Iterable[str], *, source: str, required: Sequence[str], what: str
) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, column -> value) for each row of `-P` output (`sacct -P`, `sacctmgr -P`).

    The first non-blank line is the header and must name every column in `required` (in any order);
    a trailing `|` is accepted. No header, a header lacking a column, or a row with another number
    of fields raises InputError naming the line and `what` the file should have been.
    """
    names: list[str] | None = None
    for lineno, raw in enumerate(lines, start=1):
        line = raw.rstrip("\r\n")
        if not line.strip():
            continue
        fields = line.split("|")
        if names is None:
            names = fields[:-1] if fields[-1] == "" else fields
            missing = [name for name in required if name not in names]
            if missing:
                raise InputError(source, f"header lacks {', '.join(missing)}: not {what} output", line=lineno)
            continue
        if len(fields) == len(names) + 1 and fields[-1] == "":
            fields.pop()
        if len(fields) != len(names):
            problem = f"expected {len(names)} fields separated by '|', found {len(fields)}"
            raise InputError(source, problem, line=lineno)
        yield lineno, dict(zip(names, fields, strict=True))
    if names is None:
        raise InputError(source, f"empty: expected a '{'|'.join(required[:3])}|...' header", line=1)


def read_assoc_tree(lines: Iterable[str], *, ts: datetime, source: str) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(QUOTA_SNAPSHOTS, ACCOUNT_TREE) at time `ts`; the tree is empty without a ParentName column."""
    rows: list[tuple[object, ...]] = []
    tree: list[tuple[object, ...]] = []
    for lineno, row in pipe_records(lines, source=source, required=_REQUIRED, what="sacctmgr -P show assoc"):
        if row["User"]:
            continue
        account = row["Account"]
        if not account:
            raise InputError(source, "an account association without an Account name", line=lineno)
        try:
            limits = gpu_limits(row["GrpTRES"], where=f"account {account!r}")
        except ValueError as exc:
            raise InputError(source, str(exc), line=lineno) from None
        rows.append((row["Cluster"], ts, "account", account, limits.total, _priority(row, source, lineno)))
        if "ParentName" in row:
            tree.append((row["Cluster"], ts, account, row["ParentName"] or None, limits.total, limits.typed))
    snaps = pl.DataFrame(rows, schema=tables.QUOTA_SNAPSHOTS, orient="row") if rows else tables.empty(
        tables.QUOTA_SNAPSHOTS)
    accounts = pl.DataFrame(tree, schema=tables.ACCOUNT_TREE, orient="row") if tree else tables.empty(
        tables.ACCOUNT_TREE)
    return snaps, accounts


def _priority(row: dict[str, str], source: str, lineno: int) -> int | None:
    text = row.get("Priority", "")
    if not text:
        return None
    if not re.fullmatch(r"\d{1,10}", text, re.ASCII) or int(text) > _UINT32_MAX:
        what = f"account {row['Account']!r}: Priority {text[:40]!r} is not a whole number from 0 to {_UINT32_MAX}"
        raise InputError(source, what, line=lineno)
    return int(text)
