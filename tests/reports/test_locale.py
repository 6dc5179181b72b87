from __future__ import annotations

from datetime import datetime

import pytest

from reports.locale import Formatter
from reports.model import Quantity, Text, Verdict


@pytest.mark.parametrize(
    ("seconds", "en", "zh"),
    [
        (2 * 3600 + 15 * 60, "2h 15m", "2小时15分"),
        (45 * 60, "45m", "45分钟"),
        (5 * 60 + 30, "5m 30s", "5分30秒"),
        (3600, "1h", "1小时"),
        (3599.7, "1h", "1小时"),
        (8.2, "8.2s", "8.2秒"),
        (8.0, "8s", "8秒"),
        (0.85, "850ms", "850毫秒"),
        (0, "0s", "0秒"),
        (3 * 86400 + 4 * 3600, "3d 4h", "3天4小时"),
        (2 * 86400, "2d", "2天"),
        (45000, "12h 30m", "12小时30分"),
    ],
)
def test_durations(seconds: float, en: str, zh: str) -> None:
    assert Formatter("en").duration(seconds) == en
    assert Formatter("zh").duration(seconds) == zh


@pytest.mark.parametrize(
    ("ratio", "text"),
    [(0.973, "97.3%"), (1.0, "100.0%"), (0.0, "0.0%"), (0.9996, "99.96%"), (0.0004, "0.04%"), (0.05, "5.0%")],
)
def test_percentages_never_round_a_partial_value_to_0_or_100(ratio: float, text: str) -> None:
    assert Formatter("en").percent(ratio) == text
    assert Formatter("zh").percent(ratio) == text


def test_gpu_hours_have_thousands_separators() -> None:
    en, zh = Formatter("en"), Formatter("zh")
    assert en.quantity(Quantity(12345.6, "gpu_hours")) == "12,346 GPU-hours"
    assert zh.quantity(Quantity(12345.6, "gpu_hours")) == "12,346 GPU 小时"
    assert en.quantity(Quantity(12.5, "gpu_hours")) == "12.5 GPU-hours"
    assert en.quantity(Quantity(1382400, "count")) == "1,382,400"


def test_no_data_is_never_zero() -> None:
    assert Formatter("en").quantity(Quantity(None, "gpu_hours")) == "no data"
    assert Formatter("zh").quantity(Quantity(None, "percent")) == "无数据"
    assert Formatter("en").quantity(Quantity(float("nan"), "count")) == "no data"


def test_objectives_carry_their_direction() -> None:
    assert Formatter("en").quantity(Quantity(3600, "duration", "at_most")) == "≤ 1h"
    assert Formatter("zh").quantity(Quantity(0.5, "percent", "at_least")) == "≥ 50.0%"
    assert Formatter("zh").quantity(Quantity(1.25, "multiple", "at_most")) == "≤ 1.25 倍"


def test_moments_and_months() -> None:
    moment = datetime(2026, 11, 12, 10, 5)
    assert Formatter("en").moment(moment) == "2026-11-12 10:05"
    assert Formatter("zh").moment(moment) == "2026年11月12日 10:05"


def test_strong_and_escaping_apply_to_data_only() -> None:
    fmt = Formatter("en", escape=lambda s: s.replace("|", "\\|"), strong=lambda s: f"**{s}**")
    assert fmt.cell(Text("a|b", strong=True)) == "**a\\|b**"
    assert fmt.cell(Verdict(False)) == "**missed**"
    assert fmt.cell(Verdict(None, "no_data")) == "no data"
