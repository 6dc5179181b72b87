"""What every protection line shares: peak-window masks, merging breach intervals into runs, joining
runs into episodes, and the BREACH_EPISODES row.

A line finds its breach runs (`minute_runs` for minute flags, `merge_intervals` for [start, end)
intervals) and hands them to `join_runs`, which applies the line's `for` and `keep_firing_for` the
way an alert lives: a run must last `for` before it opens an episode; once open, the episode takes
every run that starts within `keep_firing_for` of its last breaching minute, however short. So a
breach that clears for a moment and comes back is one alert, not one per recurrence.

Kept free of any one line's rules, so an add-on line uses them the way the built-ins do.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

import polars as pl

from gpusteward import cron
from gpusteward.config.protection import PeakWindow
from gpusteward.config.schema import Config
from gpusteward.config.texts import LocalText
from gpusteward.tables import TS
from sla.results import BREACH_EPISODES

_DAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")


def parse_hours(text: str) -> tuple[int, int]:
    """"HH:MM-HH:MM" as minutes of the day [start, end); end may be smaller (wraps past midnight)."""
    try:
        a, b = (p.strip() for p in text.split("-"))
        (ah, am), (bh, bm) = (map(int, a.split(":")), map(int, b.split(":")))
    except ValueError as exc:
        raise ValueError(f"hours {text!r}: expected HH:MM-HH:MM") from exc
    if not (0 <= ah <= 24 and 0 <= bh <= 24 and 0 <= am < 60 and 0 <= bm < 60):
        raise ValueError(f"hours {text!r}: expected HH:MM-HH:MM")
    return ah * 60 + am, bh * 60 + bm


def in_peak(ts: pl.Expr, peak: PeakWindow) -> pl.Expr:
    """True where the naive-UTC timestamps `ts` fall inside the peak window (local time)."""
    local = ts.dt.replace_time_zone("UTC").dt.convert_time_zone(peak.timezone)
    if peak.cron:
        minutes, hours, months, day_matches = cron.minute_matcher(peak.cron)

        def matching_days(days: pl.Series) -> pl.Series:
            return days.is_in([d for d in days.unique().drop_nulls().to_list() if day_matches(d)])

        return (
            local.dt.minute().is_in(sorted(minutes)) & local.dt.hour().is_in(sorted(hours))
            & local.dt.month().is_in(sorted(months))
            & local.dt.date().map_batches(matching_days, return_dtype=pl.Boolean)
        )
    start, end = parse_hours(peak.hours)
    of_day = local.dt.hour().cast(pl.Int32) * 60 + local.dt.minute().cast(pl.Int32)
    inside = (of_day >= start) & (of_day < end) if start <= end else (of_day >= start) | (of_day < end)
    days = [_DAYS.index(d) + 1 for d in peak.days]
    return inside & local.dt.weekday().is_in(days)


def peak_window(config: Config, name: str | None) -> PeakWindow | None:
    """The named peak window; None when the line names none (or an unknown one: validate reports it)."""
    if name is None:
        return None
    return next((p for p in config.protection.peak_windows if p.name == name), None)


def threshold_expr(ts: pl.Expr, base: float, peak: PeakWindow | None, peak_value: float | None) -> pl.Expr:
    """The line's threshold at each timestamp: `peak_value` inside the peak window, `base` outside."""
    if peak is None or peak_value is None:
        return pl.lit(base, dtype=pl.Float64)
    return pl.when(in_peak(ts, peak)).then(pl.lit(peak_value, pl.Float64)).otherwise(pl.lit(base, pl.Float64))


def minute_runs(breaching: pl.DataFrame, keys: Iterable[str] = ()) -> pl.DataFrame:
    """Runs of consecutive minutes (`ts`) per key: keys, start, end (last + 1 minute), minutes, and the
    rows grouped as lists of every other column."""
    by = list(keys)
    if breaching.height == 0:
        empty: dict[str, pl.DataType] = {k: breaching.schema[k] for k in by}
        return pl.DataFrame(schema={**empty, "start": TS, "end": TS, "minutes": pl.Int64()})
    step = pl.col("ts").diff().over(by) if by else pl.col("ts").diff()
    new = (step != pl.lit(timedelta(minutes=1))).fill_null(True)
    if by:
        new = new | pl.any_horizontal([pl.col(k) != pl.col(k).shift(1) for k in by]).fill_null(True)
    return (
        breaching.sort(*by, "ts")
        .with_columns(new.cum_sum().alias("_run"))
        .group_by(*by, "_run", maintain_order=True)
        .agg(
            pl.col("ts").min().alias("start"),
            (pl.col("ts").max() + pl.duration(minutes=1)).alias("end"),
            pl.len().cast(pl.Int64).alias("minutes"),
            pl.all().exclude("ts", *by),
        )
        .drop("_run")
    )


def merge_intervals(intervals: pl.DataFrame, keys: Iterable[str]) -> pl.DataFrame:
    """Merge overlapping or touching [start, end) intervals per key; keeps every other column as a list."""
    by = list(keys)
    ordered = intervals.sort(*by, "start")
    reach = pl.col("end").cum_max().shift(1).over(by)
    new = (pl.col("start") > reach).fill_null(True)
    return (
        ordered.with_columns(new.cast(pl.Int64).cum_sum().over(by).alias("_run"))
        .group_by(*by, "_run", maintain_order=True)
        .agg(pl.col("start").min(), pl.col("end").max(), pl.all().exclude("start", "end", *by))
        .drop("_run")
        .with_columns(((pl.col("end") - pl.col("start")).dt.total_minutes()).cast(pl.Int64).alias("minutes"))
    )


def join_runs(
    runs: pl.DataFrame, keys: Iterable[str], *, for_: timedelta, keep_firing_for: timedelta
) -> list[dict[str, Any]]:
    """Breach runs (keys, start, end, and any other columns; runs of one key do not overlap) joined
    into episodes as described in the module docstring.

    Each episode has the keys, `start` (its first run's start), `end` (its last run's end: the last
    breaching minute, never the gap after it), `breached` (the runs' summed length; the clear gaps
    between them do not count), `runs`, and every other column gathered over its runs as one list
    (list columns are concatenated, so evidence columns keep one entry per breaching row).
    """
    by = list(keys)
    gathered = [c for c in runs.columns if c not in {*by, "start", "end", "minutes"}]
    lists = {c for c in gathered if isinstance(runs.schema[c], pl.List)}
    episodes: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for run in runs.sort(*by, "start").iter_rows(named=True):
        key = tuple(run[k] for k in by)
        length: timedelta = run["end"] - run["start"]
        joins = (
            current is not None and current["_key"] == key and run["start"] - current["end"] <= keep_firing_for
        )
        if current is not None and joins:
            current["end"] = max(current["end"], run["end"])
            current["breached"] += length
            current["runs"] += 1
        elif length >= for_:
            current = {"_key": key, **{k: run[k] for k in by}, "start": run["start"], "end": run["end"],
                       "breached": length, "runs": 1, **{c: [] for c in gathered}}
            episodes.append(current)
        else:
            # Too short to open an episode, and no open episode to join: it never alerted.
            continue
        for c in gathered:
            if c in lists:
                current[c].extend(run[c])
            else:
                current[c].append(run[c])
    for ep in episodes:
        del ep["_key"]
    return episodes


def episode_row(
    line: str, subject: str, start: datetime, end: datetime, *, worst: float, threshold: float,
    severity: str, fallback: str | LocalText, evidence: str, breached: timedelta | None = None,
) -> dict[str, Any]:
    """One BREACH_EPISODES row; `minutes` counts the breaching time (`breached`, default end - start).
    A fallback given per language is stored in its default language; reports look up the others."""
    lasted = end - start if breached is None else breached
    return {
        "line": line, "subject": subject, "start": start, "end": end,
        "minutes": round(lasted / timedelta(minutes=1)), "worst_value": worst, "threshold": threshold,
        "severity": severity, "fallback": str(fallback), "evidence": evidence,
    }


def episodes_frame(rows: Iterable[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(list(rows), schema=BREACH_EPISODES, orient="row").sort("line", "subject", "start")

