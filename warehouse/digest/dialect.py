"""Where DuckDB and Spark SQL differ, for the digest's SQL: integer division and the local date of a minute.

The digest's statements (minute_digest.sql) are written in the SQL both engines share; the few
functions they do not share are written `@name(args)` there and expanded here. Everything else
(window functions, CASE, CAST, coalesce, isnan) is common to both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError


class Dialect(Protocol):
    """One engine's spelling of the functions the digest needs beyond the shared SQL."""

    @property
    def name(self) -> str: ...

    def floor_div(self, value: str, divisor: str) -> str:
        """Integer division of a non-negative BIGINT expression, as BIGINT."""
        ...

    def local_date(self, minute: str, tz: str) -> str:
        """The DATE in time zone `tz` of `minute` (minutes since 1970-01-01 UTC)."""
        ...


@dataclass(frozen=True)
class DuckDB:
    name: str = "duckdb"

    def floor_div(self, value: str, divisor: str) -> str:
        return f"({value}) // ({divisor})"

    def local_date(self, minute: str, tz: str) -> str:
        # to_timestamp gives the instant (TIMESTAMPTZ); timezone() its wall clock in `tz`.
        return f"CAST(timezone({_quoted(tz)}, to_timestamp(CAST(({minute}) * 60 AS BIGINT))) AS DATE)"


@dataclass(frozen=True)
class Spark:
    name: str = "spark"

    def floor_div(self, value: str, divisor: str) -> str:
        return f"(({value}) div ({divisor}))"

    def local_date(self, minute: str, tz: str) -> str:
        # timestamp_seconds is the instant; from_utc_timestamp renders it in `tz`, read back as a
        # wall clock in the session's zone, which the digest's session pins to UTC.
        return f"to_date(from_utc_timestamp(timestamp_seconds(CAST(({minute}) * 60 AS BIGINT)), {_quoted(tz)}))"


DUCKDB = DuckDB()
SPARK = Spark()

_CALL = re.compile(r"@(\w+)\(([^()]*(?:\([^()]*\)[^()]*)*)\)")


def expand(sql: str, dialect: Dialect, tz: str) -> str:
    """`sql` with each `@floor_div(a, b)` and `@local_date(m)` written in `dialect`."""

    def one(match: re.Match[str]) -> str:
        name, args = match.group(1), [a.strip() for a in match.group(2).split(",")]
        if name == "floor_div" and len(args) == 2:
            return dialect.floor_div(args[0], args[1])
        if name == "local_date" and len(args) == 1:
            return dialect.local_date(args[0], tz)
        raise ValueError(f"unknown dialect function @{name}({match.group(2)}) in the digest's SQL")

    return _CALL.sub(one, sql)


def _quoted(tz: str) -> str:
    """A time zone name as a SQL string literal, once it is known to be one (no quoting games)."""
    try:
        ZoneInfo(tz)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ValueError(f"unknown time zone {tz!r} for the minute digest") from error
    if "'" in tz:
        raise ValueError(f"unknown time zone {tz!r} for the minute digest")
    return f"'{tz}'"
