"""The GPU heatmap and one job's page in headless Chromium, opened by URL as the review's and the alerts'
links open them, in both languages: the figures shown equal the warehouse's, worked out here in SQL."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import polars as pl
import pytest

from dashboards.heatmap import amount
from dashboards.texts import Texts
from gpusteward import links
from gpusteward.config import load_config
from reports.locale import Lang
from reports.model import Quantity
from tests.browser.browsing import CHARTS_DRAWN
from tests.browser.chart_figures import TABLES
from tests.browser.conftest import Dashboard, keep_copy
from tests.browser.figures import _number, grids
from warehouse import Warehouse, open_warehouse

READY = ('[data-testid="stApp"][data-test-script-state="notRunning"]'
         '[data-test-connection-state="CONNECTED"]')
ERRORS = '[data-testid="stException"], [data-testid="stAlertContentError"]'
TIMEOUT_MS = 30_000
MONTH = "2026-10"
DAY = "2026-10-01"  # in Asia/Shanghai: its first eight hours come before the simulated telemetry (no data)


def _rendered(page: Any) -> None:
    from playwright.sync_api import expect

    page.wait_for_selector(READY, timeout=TIMEOUT_MS)
    expect(page.get_by_test_id("stStatusWidget")).to_have_count(0, timeout=TIMEOUT_MS)
    page.wait_for_function(CHARTS_DRAWN, timeout=TIMEOUT_MS)
    errors = page.locator(ERRORS)
    assert errors.count() == 0, [e.inner_text()[:500] for e in errors.all()]


def _open(browser: Any, dashboard: Dashboard, path: str, lang: Lang, label: str, *,
          cards: bool = True) -> tuple[Any, Any]:
    """The page at `path` in `lang`, once the card (or, without `cards`, the grid column) labelled `label`
    (catalogue key) is drawn in that language."""
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, locale="zh-CN" if lang == "zh" else "en")
    page = context.new_page()
    page.goto(dashboard.url + path, wait_until="domcontentloaded")
    _drawn(page, Texts("en")(label), cards)
    if lang == "zh":
        page.get_by_test_id("stSidebar").get_by_text("中文").click()
        _drawn(page, Texts("zh")(label), cards)
    return context, page


def _drawn(page: Any, label: str, cards: bool) -> None:
    if cards:
        found = page.get_by_test_id("stMetricLabel").filter(has_text=label).first
    else:
        found = page.locator(TABLES).filter(has_text=label).first
    found.wait_for(state="visible", timeout=TIMEOUT_MS)
    _rendered(page)


_CARDS = """() => {
    const texts = id => [...document.querySelectorAll(`[data-testid="${id}"]`)].map(e => e.innerText.trim());
    const labels = texts('stMetricLabel'), values = texts('stMetricValue');
    return labels.length === values.length ? [labels, values] : null;
}"""  # both read in one synchronous snapshot: a rerun between two reads could leave them unequal


def _metrics(page: Any) -> dict[str, str]:
    labels, values = page.wait_for_function(_CARDS, timeout=TIMEOUT_MS).json_value()
    return dict(zip(labels, values, strict=True))


def _shoot(page: Any, dashboard: Dashboard, name: str) -> None:
    shot = dashboard.shots / f"{name}.png"
    page.screenshot(path=shot, full_page=True)
    keep_copy(shot)


def _warehouse(dashboard: Dashboard) -> Any:
    config = load_config(dashboard.root / "gpusteward.toml")
    return open_warehouse(config.resolve(config.warehouse.path), read_only=True)


def _day_span() -> tuple[datetime, datetime]:
    zone = ZoneInfo("Asia/Shanghai")
    start = datetime.fromisoformat(DAY).replace(tzinfo=zone).astimezone(ZoneInfo("UTC")).replace(tzinfo=None)
    return start, start + timedelta(days=1)


def _heatmap_figures(wh: Warehouse, cluster: str) -> tuple[float, float, float]:
    """(GPUs, engine activity over the minutes with it, GPU-hours of the day without any) from the minute rows,
    GPUs and GPU-hours in whole-GPU equivalents (each row's `share`: a MIG instance its slices of the card)."""
    lo, hi = _day_span()
    gpus = wh.query("SELECT sum(share) AS n FROM gpus WHERE cluster = ? AND first_seen < ? AND last_seen >= ?",
                    [cluster, hi, lo])["n"][0]
    engine = wh.query(
        "SELECT avg(m.gr_engine_active) AS mean FROM gpu_minutes m JOIN gpus g USING (gpu_key)"
        " WHERE g.cluster = ? AND m.ts >= ? AND m.ts < ?", [cluster, lo, hi]).row(0, named=True)
    measured = wh.query(
        "SELECT sum(share) AS hours FROM (SELECT DISTINCT m.gpu_key, date_trunc('hour', m.ts) AS hour, g.share"
        " FROM gpu_minutes m JOIN gpus g USING (gpu_key)"
        " WHERE g.cluster = ? AND m.ts >= ? AND m.ts < ? AND m.gr_engine_active IS NOT NULL)",
        [cluster, lo, hi])["hours"][0]
    return float(gpus), float(engine["mean"]), float(gpus) * 24 - float(measured)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_heatmap_shows_the_warehouses_figures(browser: Any, dashboard: Dashboard, lang: Lang) -> None:
    from playwright.sync_api import expect

    with _warehouse(dashboard) as wh:
        gpus, mean, no_data = _heatmap_figures(wh, "east")
    assert gpus > 0
    assert no_data >= 8 * gpus - 1e-9  # hours before telemetry began: no data (shares summed in floats)
    context, page = _open(browser, dashboard, f"/heatmap?month={MONTH}&cluster=east&day={DAY}", lang, "heatmap.gpus")
    try:
        tx = Texts(lang, "Asia/Shanghai")
        shown = _metrics(page)
        assert shown[tx("heatmap.gpus")] == amount(tx, gpus, 2)
        assert shown[tx("heatmap.mean")] == tx.fmt.quantity(Quantity(mean, "percent"))
        assert shown[tx("heatmap.cells_no_data")] == tx(
            "heatmap.cells_value", missing=amount(tx, no_data, 1), total=amount(tx, gpus * 24, 1))
        expect(page.get_by_test_id("stVegaLiteChart")).to_have_count(1, timeout=TIMEOUT_MS)  # drawn after the cards
        assert f"day={DAY}" in page.url
        assert "cluster=east" in page.url
        _shoot(page, dashboard, f"heatmap.{lang}")
    finally:
        context.close()


def _a_job(wh: Warehouse) -> dict[str, Any]:
    """A job that ran and ended with an exit status (a failed one when there is one), and its figures worked out
    from its records: GPU-hours in the month's window (whole-GPU equivalents: a MIG slice's share; the demo
    declares no time-sliced nodes), the summed queue wait, the last record's exit."""
    job = wh.query(
        "SELECT cluster, job_id FROM jobs WHERE start_time IS NOT NULL AND end_time IS NOT NULL AND gpus_allocated > 0"
        " AND (exit_code IS NOT NULL OR exit_signal IS NOT NULL)"
        " ORDER BY (state LIKE 'FAILED%') DESC, (exit_signal IS NOT NULL) DESC, job_id LIMIT 1").row(0, named=True)
    lo = datetime(2026, 9, 30, 16)  # October in Asia/Shanghai
    end = wh.query("SELECT max(ts) + INTERVAL 1 MINUTE AS e FROM gpu_minutes")["e"][0]
    hi = min(datetime(2026, 10, 31, 16), end)
    records = wh.query(
        "SELECT coalesce(gpu_equivalents, gpus_allocated)"
        " * greatest(epoch(least(coalesce(end_time, ?), ?) - greatest(start_time, ?)), 0) / 3600"
        " AS hours, CASE WHEN start_time >= ? AND start_time < ? THEN greatest(epoch(start_time - eligible_time), 0)"
        " END AS wait, exit_code, exit_signal FROM jobs WHERE cluster = ? AND job_id = ? ORDER BY submit_time",
        [hi, hi, lo, lo, hi, job["cluster"], job["job_id"]])
    waits = [w for w in records["wait"].to_list() if w is not None]
    last = records.row(-1, named=True)
    return job | {"hours": float(records["hours"].sum()), "wait": float(sum(waits)) if waits else None,
                  "exit_code": last["exit_code"], "exit_signal": last["exit_signal"]}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_jobs_page_shows_the_warehouses_figures(browser: Any, dashboard: Dashboard, lang: Lang) -> None:
    with _warehouse(dashboard) as wh:
        job = _a_job(wh)
    key = f"{job['cluster']}/{job['job_id']}"
    context, page = _open(browser, dashboard, f"/job?month={MONTH}&job={key}", lang, "jobs.col.gpu_hours")
    try:
        tx = Texts(lang, "Asia/Shanghai")
        shown = _metrics(page)
        assert shown[tx("jobs.col.gpu_hours")] == tx.fmt.quantity(Quantity(job["hours"], "gpu_hours"))
        assert shown[tx("jobs.col.wait")] == tx.fmt.quantity(Quantity(job["wait"], "duration"))
        exit_text = (tx("job.exit_signal", signal=job["exit_signal"]) if job["exit_signal"]
                     else str(job["exit_code"]))
        assert shown[tx("jobs.col.exit")] == exit_text
        assert "job=" in page.url
        _shoot(page, dashboard, f"job.{lang}")
    finally:
        context.close()


def _listed(wh: Warehouse, month_start: datetime, month_end: datetime) -> int:
    """Jobs of the month as the job page counts them: every (cluster, job id) with a record overlapping it."""
    return int(wh.query(
        "SELECT count(DISTINCT (cluster, job_id)) AS n FROM jobs WHERE submit_time < ?"
        " AND (end_time IS NULL OR end_time >= ?)", [month_end, month_start])["n"][0])


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_job_picker_lists_a_few_jobs_and_the_id_box_opens_one(browser: Any, dashboard: Dashboard,
                                                                  lang: Lang) -> None:
    """Opened without a job, the page lists the first 25 of the month's jobs (never the whole month); the job id
    typed in the box opens that job, whose figures equal the warehouse's, and goes into the address."""
    with _warehouse(dashboard) as wh:
        job = _a_job(wh)
        total = _listed(wh, datetime(2026, 9, 30, 16), datetime(2026, 10, 31, 16))
    context, page = _open(browser, dashboard, f"/job?month={MONTH}", lang, "col.gpu_hours")
    try:
        tx = Texts(lang, "Asia/Shanghai")
        listed = tx("job.listed", shown=tx.fmt.number(min(25, total)), total=tx.fmt.number(total),
                    sort=tx("job_sort.gpu_hours"))
        page.get_by_text(listed).first.wait_for(state="visible", timeout=TIMEOUT_MS)
        box = page.get_by_role("textbox", name=tx("job.find"))
        box.fill(str(job["job_id"]))
        box.press("Enter")
        key = f"{job['cluster']}/{job['job_id']}"
        page.wait_for_function("key => new URLSearchParams(location.search).get('job') === key", arg=key,
                               timeout=TIMEOUT_MS)
        _rendered(page)
        shown = _metrics(page)
        assert shown[tx("col.gpu_hours")] == tx.fmt.quantity(Quantity(job["hours"], "gpu_hours"))
        assert shown[tx("jobs.col.wait")] == tx.fmt.quantity(Quantity(job["wait"], "duration"))
    finally:
        context.close()


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_review_link_to_a_teams_idle_jobs(browser: Any, dashboard: Dashboard, lang: Lang) -> None:
    """The link the review writes after "team X left N GPU-hours idle" opens X's jobs, most idle first, with the
    idle GPU-hours the warehouse's idle_by_job holds."""
    idle = dashboard.month.outputs.idle.with_columns(
        ((pl.col("idle_minutes") + pl.col("idle_held_minutes")) / 60).alias("hours"))
    team = str(idle.group_by("team").agg(pl.col("hours").sum()).sort("hours", descending=True)["team"][0])
    top = float(idle.filter(pl.col("team") == team)["hours"].max())  # type: ignore[arg-type]
    target = links.team_jobs(MONTH, team, "idle")
    path = "/" + (target.url("http://x") or "").removeprefix("http://x/")
    context, page = _open(browser, dashboard, path, lang, "jobs.col.gpu_hours", cards=False)
    try:
        tx = Texts(lang, "Asia/Shanghai")
        tables = grids(page)
        jobs = next(t for t in tables if tx("jobs.col.outcome") in t[0])
        column = jobs[0].index(tx("col.idle"))
        assert abs(_number(jobs[1][column], tx) - top) <= 0.005, (jobs[1], top)
        names = {r[jobs[0].index(tx("col.team"))] for r in jobs[1:]}
        assert names == {dashboard.month.team_names.get(team, team)}
        assert "focus=idle" in page.url
        _shoot(page, dashboard, f"jobs.{lang}")
    finally:
        context.close()
