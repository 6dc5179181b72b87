"""Formatter.compact: headline numbers short enough for a card, in each language's own units."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reports.locale import Formatter


@pytest.mark.parametrize(
    ("value", "en", "zh"),
    [
        (0, "0", "0"),
        (7.25, "7.2", "7.2"),
        (516.4, "516", "516"),
        (999.6, "1k", "1,000"),
        (1478, "1.48k", "1,478"),  # Chinese counts in ten thousands: below 1万 the number is written in full
        (9999.9, "10k", "1万"),
        (34099, "34.1k", "3.41万"),
        (999_950, "1M", "100万"),  # rounds up into the next unit rather than "1,000k"
        (123_456_789, "123M", "1.23亿"),
        (-34099, "-34.1k", "-3.41万"),
        (None, "no data", "无数据"),
    ],
)
def test_compact_numbers_in_both_languages(value: float | None, en: str, zh: str) -> None:
    assert Formatter("en").compact(value) == en
    assert Formatter("zh").compact(value) == zh


UNITS = {"": 1.0, "k": 1e3, "M": 1e6, "B": 1e9}


@given(st.floats(min_value=-1e11, max_value=1e11, allow_nan=False))
def test_a_compact_number_is_short_and_within_rounding_of_the_value(value: float) -> None:
    text = Formatter("en").compact(value)
    match = re.fullmatch(r"(-?[\d,]+(?:\.\d+)?)([kMB]?)", text)
    assert match, text
    number, unit = match.groups()
    shown = float(number.replace(",", "")) * UNITS[unit]
    assert len(text) <= 7, text  # "-1,000B" at most; a card fits seven characters at 1,400 px
    tolerance = 0.005 * abs(value) + (0.05 if abs(value) < 100 else 0.5)  # three significant digits, or whole
    assert abs(shown - value) <= tolerance, (value, text)
