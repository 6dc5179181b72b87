"""The drill-down pages (dashboards.app.DRILL_PAGES) as tests/browser/test_pages.py visits them: opened by the
addresses the review's and the alerts' links write, their figures worked out in SQL over the warehouse by
tests/browser/test_drill.py's helpers, and their screenshots compared like every page's."""

from __future__ import annotations

from typing import Any

import polars as pl

from dashboards.heatmap import amount
from dashboards.texts import Texts
from gpusteward import links
from reports.model import Quantity
from tests.browser.figures import Shown, Visit, _number, grids
from tests.browser.test_drill import DAY, MONTH, _a_job, _heatmap_figures, _metrics
from warehouse import open_warehouse

CLUSTER = "east"


def _warehouse(shown: Shown) -> Any:
    assert shown.db is not None, "the month's warehouse file is needed to work out the drill-down's figures"
    return open_warehouse(shown.db, read_only=True)


def _heatmap(page: Any, shown: Shown, tx: Texts) -> int:
    with _warehouse(shown) as wh:
        gpus, mean, no_data = _heatmap_figures(wh, CLUSTER)
    cards = _metrics(page)
    assert cards[tx("heatmap.gpus")] == amount(tx, gpus, 2), cards
    assert cards[tx("heatmap.mean")] == tx.fmt.quantity(Quantity(mean, "percent")), cards
    assert cards[tx("heatmap.cells_no_data")] == tx(
        "heatmap.cells_value", missing=amount(tx, no_data, 1), total=amount(tx, gpus * 24, 1)), cards
    return 3


def _most_idle_team(shown: Shown) -> tuple[str, float]:
    idle = shown.outputs.idle.with_columns(((pl.col("idle_minutes") + pl.col("idle_held_minutes")) / 60).alias("h"))
    team = str(idle.group_by("team").agg(pl.col("h").sum()).sort(["h", "team"], descending=[True, False])["team"][0])
    return team, float(idle.filter(pl.col("team") == team)["h"].max())  # type: ignore[arg-type]


def _jobs_query(shown: Shown) -> dict[str, str]:
    query = links.team_jobs(MONTH, _most_idle_team(shown)[0], "idle").query()
    return {k: v if isinstance(v, str) else ",".join(v) for k, v in query.items()}


def _jobs(page: Any, shown: Shown, tx: Texts) -> int:
    team, top = _most_idle_team(shown)
    jobs = next(t for t in grids(page) if tx("jobs.col.outcome") in t[0])
    assert abs(_number(jobs[1][jobs[0].index(tx("col.idle"))], tx) - top) <= 0.005, (jobs[1], top)
    names = {r[jobs[0].index(tx("col.team"))] for r in jobs[1:]}
    assert names == {shown.team_names.get(team, team)}, names
    return len(jobs) - 1  # each row's team, and the first row's idle GPU-hours


def _job_query(shown: Shown) -> dict[str, str]:
    with _warehouse(shown) as wh:
        job = _a_job(wh)
    return {"month": MONTH, "job": f"{job['cluster']}/{job['job_id']}"}


def _job(page: Any, shown: Shown, tx: Texts) -> int:
    with _warehouse(shown) as wh:
        job = _a_job(wh)
    cards = _metrics(page)
    assert cards[tx("jobs.col.gpu_hours")] == tx.fmt.quantity(Quantity(job["hours"], "gpu_hours")), cards
    assert cards[tx("jobs.col.wait")] == tx.fmt.quantity(Quantity(job["wait"], "duration")), cards
    exit_text = tx("job.exit_signal", signal=job["exit_signal"]) if job["exit_signal"] else str(job["exit_code"])
    assert cards[tx("jobs.col.exit")] == exit_text, cards
    return 3


VISITS = [
    Visit("heatmap", _heatmap, query=lambda _s: {"month": MONTH, "cluster": CLUSTER, "day": DAY}),
    Visit("jobs", _jobs, query=_jobs_query),
    Visit("job", _job, title_key="job.title_month", query=_job_query),
]
