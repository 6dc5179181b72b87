"""The showback page as tests/browser/test_pages.py visits it: each team's GPU-hours equal the month's usage
(sla/usage.py, its own sum of the job records), and all rows together equal the capacity the inventory
offered over the month's data, priced at the config's uniform GPU-hour price (worked out in SQL here)."""

from __future__ import annotations

from typing import Any

import polars as pl

from dashboards.texts import Texts
from tests.browser.figures import Shown, Visit, _number, grids
from warehouse import open_warehouse

_CAPACITY = """
SELECT sum(share * date_diff('second', greatest(first_seen, ?), ?) / 3600.0) FROM gpus WHERE first_seen < ?
"""


def _capacity_hours(shown: Shown) -> float:
    assert shown.db is not None
    start = shown.month.start.replace(tzinfo=None)
    with open_warehouse(shown.db, read_only=True) as wh:
        end = min(shown.month.end.replace(tzinfo=None), wh.data_end() or start)
        return float(wh.query(_CAPACITY, [start, end, end]).item())


def _showback(page: Any, shown: Shown, tx: Texts) -> int:
    grid = next(g for g in grids(page) if tx("col.unallocated_share") in g[0])
    header, rows = grid[0], grid[1:]
    team, hours, cost = (header.index(tx(c)) for c in ("col.team", "col.gpu_hours", "col.gpu_cost"))
    usage = dict(shown.outputs.usage.group_by("team").agg(pl.col("gpu_hours").sum()).rows())
    named = {shown.team_names.get(t, t): h for t, h in usage.items()}
    checked = 0
    for row in rows:
        if row[team] in named:
            assert abs(_number(row[hours], tx) - named[row[team]]) <= 0.06, (row, named[row[team]])
            checked += 1
    capacity = _capacity_hours(shown)
    assert abs(sum(_number(r[hours], tx) for r in rows) - capacity) <= 0.06 * len(rows), capacity
    price = float(shown.config.showback.gpu_hour)
    assert abs(sum(_number(r[cost], tx) for r in rows) - capacity * price) <= 0.01 * len(rows), capacity * price
    return checked + 2


VISITS = [Visit("showback", _showback, title_key="showback_page.title")]
