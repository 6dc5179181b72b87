"""The window an objective is judged over, as configs spell it: "month" or a rolling "7d" / "28d".

Pyrra and Sloth judge an SLO over a rolling window (Sloth: 30d or 28d, Pyrra: any, 4w typical); the
Google SRE workbook recommends four weeks, which hold the same number of weekends. A monthly review
also needs the calendar month. Rolling windows end at the review's end and must fit in every month
(February has 28 days), so the month's data is enough to judge them.
"""

from __future__ import annotations

from datetime import timedelta

from gpusteward.durations import format_duration, parse_duration

CALENDAR_MONTH = "month"
LONGEST_ROLLING = timedelta(days=28)
"""A rolling window must fit in every month (February has 28 days): the SRE workbook's 4 weeks."""


def parse_window(text: str) -> timedelta | None:
    """`"month"` -> None (the calendar month); `"7d"` -> 7 days. ValueError saying what is accepted."""
    if text.strip().lower() == CALENDAR_MONTH:
        return None
    try:
        span = parse_duration(text)
    except ValueError:
        span = timedelta(0)
    if span < timedelta(days=1) or span > LONGEST_ROLLING or span % timedelta(days=1):
        raise ValueError(f'expected "month" or a rolling window of whole days from 1d to 28d, got {text!r}')
    return span


def format_window(span: timedelta | None) -> str:
    return CALENDAR_MONTH if span is None else format_duration(span)
