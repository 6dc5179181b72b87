"""AppTest script: the whole app (language switch, month picker) with an injected loader."""

from __future__ import annotations

from dataclasses import replace

from dashboards.app import run_app
from dashboards.data import NoMonthError, OverviewData
from gpusteward.domain import Month
from tests.dashboards.sample import sample_overview


def load(month: Month | None) -> OverviewData:
    data = sample_overview()
    if month is None or month == data.month:
        return data
    if month in data.months:
        return replace(data, month=month)
    raise NoMonthError(f"no outputs for {month}")


run_app(load)
