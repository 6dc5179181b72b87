"""The digest's SQL (minute_digest.sql) as named statements, rendered for one engine and one window,
and the frames they hand back turned into the evaluation's `MinuteDigest`."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from functools import cache
from importlib import resources
from typing import Literal, cast
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import polars as pl

from gpusteward.config.schema import IdleConfig
from gpusteward.tables import TS, conform
from sla.common import Window
from sla.minute_digest import GAPS, GPUS, HOST_SILENCES, IDLE_RUNS, JOB_DAYS, MinuteDigest
from warehouse.digest.dialect import Dialect, expand

OUTPUTS = ("job_days", "gpus", "host_silences", "gaps", "idle_runs")
"""The statements whose rows are handed back: the digest's frames."""

Kind = Literal["view", "table", "output"]
"""view: a named query the later statements read; table: the same, materialised (read more than
once, or its input is costly); output: its rows are handed back."""

_EPOCH = datetime(1970, 1, 1)
_HEAD = re.compile(r"^-- (view|table|output): (\w+)\s*$", re.MULTILINE)


@dataclass(frozen=True)
class Statement:
    kind: Kind
    name: str
    sql: str


@dataclass(frozen=True)
class Relations:
    """What the statements read: the GPU-minutes and the two key tables (names or parenthesised queries)."""

    minutes: str
    gpus: str
    jobs: str


@cache
def _source() -> tuple[tuple[Kind, str, str], ...]:
    text = resources.files("warehouse.digest").joinpath("minute_digest.sql").read_text(encoding="utf-8")
    parts = _HEAD.split(text)
    kinds, names, bodies = parts[1::3], parts[2::3], parts[3::3]
    parsed = tuple(
        (cast(Kind, k), n, b.strip().rstrip(";")) for k, n, b in zip(kinds, names, bodies, strict=True)
    )
    if tuple(n for k, n, _ in parsed if k == "output") != OUTPUTS:
        raise RuntimeError(f"minute_digest.sql must end in the outputs {OUTPUTS}")
    return parsed


def minute_of(moment: datetime) -> int:
    """The first whole minute (since 1970-01-01 UTC) at or after a naive UTC instant."""
    return math.ceil((moment - _EPOCH).total_seconds() / 60)


def slot_minutes(window: Window) -> int:
    """Minutes summed together in the digest's first pass: 60 where every UTC offset of the window's
    zone, at every quarter hour of the window, is a whole hour (local days then begin on the hour),
    else 15 (every zone's offsets are whole quarter hours: Asia/Kolkata +5:30, Asia/Kathmandu +5:45)."""
    try:
        zone = ZoneInfo(window.tz)
    except (ZoneInfoNotFoundError, ValueError) as error:
        raise ValueError(f"unknown time zone {window.tz!r} for the minute digest") from error
    step, moment = timedelta(minutes=15), window.start.replace(tzinfo=UTC)
    end = max(window.end.replace(tzinfo=UTC), moment + step)
    while moment <= end:
        offset = zone.utcoffset(moment)
        if offset is None or offset % timedelta(hours=1):
            return 15
        moment += step
    return 60


def statements(dialect: Dialect, relations: Relations, window: Window, idle: IdleConfig) -> list[Statement]:
    """The digest's statements for `window` and `idle`, in the order they must run."""
    values = {
        "slot": str(slot_minutes(window)),
        "input": relations.minutes,
        "gpus": relations.gpus,
        "jobs": relations.jobs,
        "lo": str(minute_of(window.start)),
        "hi": str(minute_of(window.end)),
        "util_below": _number(idle.util_below),
        "min_minutes": str(int(idle.min_minutes)),
        "held_mib": _number(idle.held_memory_mib),
    }
    return [
        Statement(kind, name, expand(body.format_map(values), dialect, window.tz)) for kind, name, body in _source()
    ]


def _number(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError(f"idle setting {value!r} is not a finite number")
    return repr(float(value))


def _instant(column: str) -> pl.Expr:
    return (pl.col(column).cast(pl.Int64) * 60_000_000).cast(TS)


def to_digest(frames: dict[str, pl.DataFrame], window: Window, idle: IdleConfig) -> MinuteDigest:
    """The `MinuteDigest` from the output statements' rows (minutes as integers, a few names differing)."""
    job_days = frames["job_days"].rename({"local_day": "day"})
    gpus = frames["gpus"].rename({"row_count": "rows"}).with_columns(
        _instant("first_minute").alias("first_ts"), _instant("last_minute").alias("last_ts")
    )
    silences = frames["host_silences"].with_columns(_instant("gap_start"), _instant("gap_end"))
    gaps = frames["gaps"].with_columns(_instant("gap_start"), _instant("gap_end"))
    runs = frames["idle_runs"].with_columns(_instant("run_start").alias("start"))
    return MinuteDigest(
        window=window,
        idle=idle,
        job_days=conform(job_days, JOB_DAYS),
        gpus=conform(gpus, GPUS),
        host_silences=conform(silences, HOST_SILENCES),
        gaps=conform(gaps, GAPS),
        idle_runs=conform(runs, IDLE_RUNS),
    )
