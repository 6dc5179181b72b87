"""The drill-down's frames: a month's jobs add up to the evaluation's usage per team; the job page's timeline
breaks at gaps; the heatmap has a row for a silent GPU and the hours of a DST day."""

from __future__ import annotations

from datetime import date, datetime, timedelta

import polars as pl
import pytest

from dashboards import heatmap as hm
from dashboards import job_page
from dashboards import jobs as job_frames
from gpusteward import tables
from gpusteward.domain import Month
from sla.inputs import GPU_INVENTORY, EvaluationInputs
from sla.results import IDLE_BY_JOB, LEDGER
from sla.usage import queue_usage, usage_by_team
from tests.dashboards.drill_sample import JOBS, _buckets, drill_config
from tests.reports.fixtures import MONTH
from warehouse.gpu_buckets import GPU_BUCKETS
from warehouse.gpu_buckets import GPU_INVENTORY as INVENTORY

RECORDS = tables.conform(pl.from_dicts(JOBS, infer_schema_length=None), tables.JOBS)
STATUS = {"tables": {"gpu_minutes": {"max_ts": "2026-11-20T11:59:00"}}}  # the month still in progress


def test_a_teams_jobs_add_up_to_the_evaluations_usage() -> None:
    config = drill_config()
    span = job_frames.window(MONTH, STATUS)
    assert span.end == datetime(2026, 11, 20, 12)
    rows = job_frames.job_rows(RECORDS, pl.DataFrame(schema=IDLE_BY_JOB), pl.DataFrame(schema=LEDGER), config, span)
    inputs = EvaluationInputs(MONTH, RECORDS, tables.empty(tables.JOB_EVENTS), tables.empty(tables.GPU_MINUTES),
                              tables.empty(tables.INFERENCE_WINDOWS), tables.empty(tables.QUOTA_SNAPSHOTS),
                              tables.empty(GPU_INVENTORY), span.end)
    usage = usage_by_team(queue_usage(inputs, config)).group_by("team").agg(pl.col("gpu_hours").sum())
    ours = rows.group_by("team").agg(pl.col("gpu_hours").sum())
    assert dict(ours.sort("team").rows()) == pytest.approx(dict(usage.sort("team").rows()))
    running = rows.filter(pl.col("job_id") == 20010).row(0, named=True)
    assert running["state"] == "RUNNING"
    assert running["gpu_hours"] == 8 * (span.end - datetime(2026, 11, 8)).total_seconds() / 3600


def test_a_requeued_jobs_wait_and_outcome() -> None:
    rows = job_frames.job_rows(RECORDS, pl.DataFrame(schema=IDLE_BY_JOB),
                               pl.DataFrame([{"cluster": "east", "job_id": 20011, "action": "preemption"}],
                                            schema=LEDGER),
                               drill_config(), job_frames.window(MONTH, {}))
    job = rows.filter(pl.col("job_id") == 20011).row(0, named=True)
    assert (job["records"], job["wait_s"], job["state"], job["exit_signal"], job["preemptions"]) == (
        2, 50 * 60 + 2 * 3600, "FAILED", 9, 1)
    assert job_frames.focused(rows, "failed")["job_id"].to_list() == [20011]
    assert job_frames.focused(rows, "preempted")["job_id"].to_list() == [20011]
    assert job_frames.ordered(rows, "outcome")["job_id"].to_list()[0] == 20011  # failures first
    assert job_frames.ordered(rows, "wait")["wait_s"].to_list()[0] == 2 * 3600 + 50 * 60


def _rows() -> pl.DataFrame:
    return job_frames.job_rows(RECORDS, pl.DataFrame(schema=IDLE_BY_JOB), pl.DataFrame(schema=LEDGER), drill_config(),
                               job_frames.window(MONTH, STATUS))


def test_the_job_picker_lists_the_first_few_of_the_filtered_jobs() -> None:
    rows = _rows()
    top, matched = job_frames.picked(rows, account="research", state=None, sort="gpu_hours", limit=2)
    assert (top["job_id"].to_list(), matched) == ([31001, 31002], 3)  # 4 x 40 h, 4 x 30 h; 31003: 1 x 50 h
    top, matched = job_frames.picked(rows, account=None, state="FAILED", sort="gpu_hours", limit=25)
    assert (top["job_id"].to_list(), matched) == ([20011], 1)
    top, _ = job_frames.picked(rows, account=None, state=None, sort="wait", limit=25)
    assert top["job_id"].to_list()[0] == 20011  # its two waits: 50 min and 2 h
    assert top["wait_s"].is_null().to_list() == sorted(top["wait_s"].is_null().to_list())  # no wait: last


def test_a_job_found_by_its_id() -> None:
    rows = _rows()
    assert job_frames.found(rows, " 20011 ") == ["east/20011"]
    assert job_frames.found(rows, "east/20011") == ["east/20011"]
    assert job_frames.found(rows, "west/20011") == []
    assert job_frames.found(rows, "12345678901234567890") == []  # past an Int64: no job, no error
    assert job_frames.found(rows, "") == []
    twice = pl.concat([rows, rows.filter(pl.col("job_id") == 20011).with_columns(pl.lit("west").alias("cluster"))])
    assert job_frames.found(twice, "20011") == ["east/20011", "west/20011"]


def test_the_timeline_breaks_where_telemetry_stops() -> None:
    buckets = _buckets().filter(pl.col("gpu") == 1)
    later = buckets.with_columns(pl.col("bucket") + timedelta(hours=2))  # 12:00-13:00 again: 11:00-12:00 silent
    frame = job_page.timeline(pl.concat([buckets, later]), datetime(2026, 11, 10, 10), datetime(2026, 11, 10, 13),
                              "UTC")
    engine = frame.filter(pl.col("measure") == "engine")
    assert engine["segment"].unique().sort().to_list() == [0, 1]
    assert engine["value"].to_list() == [0.0] * 24  # zero activity stays zero; the silent hour has no point
    assert engine["time"][0] == "2026-11-10T10:00:00Z"


def test_a_long_job_is_drawn_in_coarser_steps() -> None:
    assert job_page.step_for(datetime(2026, 11, 1), datetime(2026, 11, 2)) == "5m"
    assert job_page.step_for(datetime(2026, 11, 1), datetime(2026, 11, 30)) == "1h"
    records = pl.DataFrame({"start_time": [datetime(2026, 11, 1, 10, 7)], "end_time": [None]},
                           schema={"start_time": pl.Datetime("us"), "end_time": pl.Datetime("us")})
    assert job_page.span(records, datetime(2026, 11, 1, 12)) == (datetime(2026, 11, 1, 10, 5),
                                                                 datetime(2026, 11, 1, 12))


def test_a_silent_gpu_is_a_row_of_no_data() -> None:
    inventory = pl.DataFrame([("east", "e1", g, "H100", datetime(2026, 11, 1), datetime(2026, 12, 1), 1.0)
                              for g in range(3)], schema=INVENTORY, orient="row")
    cells = hm.cells(inventory, _buckets(), "east", date(2026, 11, 10), "UTC")
    assert cells.height == 3 * 24
    silent = cells.filter(pl.col("gpu") == 2)
    assert silent["engine"].null_count() == 24
    assert silent["minutes"].to_list() == [0] * 24
    zero = cells.filter((pl.col("gpu") == 1) & (pl.col("hour") == "10:00")).row(0, named=True)
    assert (zero["engine"], zero["minutes"]) == (0.0, 60)  # exactly zero is data, drawn in colour


def test_the_day_the_clocks_go_back_has_25_hours() -> None:
    inventory = pl.DataFrame([("east", "e1", 0, "H100", None, None, 1.0)], schema=INVENTORY, orient="row")
    day = date(2026, 11, 1)  # America/New_York leaves daylight saving time at 02:00
    cells = hm.cells(inventory, tables.empty(GPU_BUCKETS), "east", day, "America/New_York")
    assert cells.height == 25
    assert cells.sort("order")["hour"].to_list()[:3] == ["00:00", "01:00", "01:00′"]
    assert hm.day_bounds(day, "America/New_York") == (datetime(2026, 11, 1, 4), datetime(2026, 11, 2, 5))


def test_local_days_of_utc_days() -> None:
    assert hm.local_days([date(2026, 11, 10)], "Asia/Shanghai") == [date(2026, 11, 10), date(2026, 11, 11)]
    assert hm.local_days([date(2026, 11, 10)], "UTC") == [date(2026, 11, 10)]


def test_month_of_the_window() -> None:
    assert job_frames.window(Month(2026, 11, "Asia/Shanghai"), {}).start == datetime(2026, 10, 31, 16)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_no_data_has_its_own_legend_entry_outside_the_colour_scale(lang: str) -> None:
    from dashboards.texts import Texts

    inventory = pl.DataFrame([("east", "e1", g, "H100", None, None, 1.0) for g in range(3)], schema=INVENTORY,
                             orient="row")
    cells = hm.cells(inventory, _buckets(), "east", date(2026, 11, 10), "UTC")
    tx = Texts("zh" if lang == "zh" else "en")
    spec = hm.chart(cells, tx).to_dict()
    measured, missing = spec["layer"]
    assert measured["encoding"]["color"]["scale"] == {"domain": [0, 100], "scheme": "viridis"}
    assert missing["encoding"]["color"]["scale"] == {"domain": [tx("heatmap.no_data")], "range": [hm.NO_DATA_FILL]}
    assert missing["mark"]["strokeDash"] == [2, 2]
    assert spec["resolve"] == {"scale": {"color": "independent"}}  # two legends
    # the axes are ordered by a field of each cell, never by a list of values (an `indexof` per cell in the browser)
    assert measured["encoding"]["y"]["sort"] == {"field": "row_order", "op": "min"}
    assert measured["encoding"]["x"]["sort"] == {"field": "order", "op": "min"}
    rows = spec["datasets"][next(iter(spec["datasets"]))]
    assert sum(r["engine_pct"] is None for r in rows) == 3 * 24 - 3  # no data is null in the data, never 0
    assert sum(r["engine_pct"] == 0.0 for r in rows) == 1  # GPU 1 at exactly zero, 10:00


def test_heatmap_rows_in_host_then_gpu_number_order() -> None:
    from dashboards.texts import Texts

    inventory = pl.DataFrame([("east", h, g, "H100", None, None, 1.0) for h in ("e2", "e1") for g in (10, 2)],
                             schema=INVENTORY, orient="row")
    cells = hm.cells(inventory, _buckets().head(0), "east", date(2026, 11, 10), "UTC")
    spec = hm.chart(cells, Texts("en")).to_dict()
    rows = spec["datasets"][next(iter(spec["datasets"]))]
    ranks = {r["row"]: r["row_order"] for r in rows}
    assert sorted(ranks, key=ranks.__getitem__) == ["e1 · 2", "e1 · 10", "e2 · 2", "e2 · 10"]


def test_a_big_cluster_is_drawn_a_block_of_gpus_at_a_time() -> None:
    inventory = pl.DataFrame([("east", f"e{h:03d}", g, "H100", None, None, 1.0) for h in range(70) for g in range(8)],
                             schema=INVENTORY, orient="row")
    cells = hm.cells(inventory, _buckets().head(0), "east", date(2026, 11, 10), "UTC")
    assert hm.blocks(cells) == [(1, 250), (251, 500), (501, 560)]
    last = hm.block_of(cells, 2)
    assert last.select("host", "gpu").unique().height == 60
    assert last.sort("host", "gpu")["row"][0] == "e062 · 4"  # GPU 501: the 63rd host's fifth
    assert hm.block_of(cells, 0)["row"].n_unique() == hm.ROWS_PER_CHART
    small = hm.cells(inventory.head(16), _buckets().head(0), "east", date(2026, 11, 10), "UTC")
    assert hm.blocks(small) == [(1, 16)]


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_job_running_since_before_the_month_says_so_instead_of_no_data(lang: str) -> None:
    from dashboards.drill_frames import wait_text
    from dashboards.texts import Texts
    from reports.model import Quantity

    # 20010 submitted and started in October, still running: its wait fell before the month's window.
    october = RECORDS.with_columns(
        pl.when(pl.col("job_id") == 20010).then(pl.lit(datetime(2026, 10, 28))).otherwise(pl.col(c)).alias(c)
        for c in ("submit_time", "eligible_time", "start_time")
    )
    rows = job_frames.job_rows(october, pl.DataFrame(schema=IDLE_BY_JOB), pl.DataFrame(schema=LEDGER),
                               drill_config(), job_frames.window(MONTH, {}))
    tx = Texts("zh" if lang == "zh" else "en")
    running = rows.filter(pl.col("job_id") == 20010).row(0, named=True)
    assert running["wait_s"] is None
    assert wait_text(tx, running["wait_s"], running["first_start"]) == tx("job.wait_before_month")
    requeued = rows.filter(pl.col("job_id") == 20011).row(0, named=True)
    assert wait_text(tx, requeued["wait_s"], requeued["first_start"]) == tx.fmt.quantity(
        Quantity(2 * 3600 + 50 * 60, "duration"))
    assert wait_text(tx, None, None) == tx.fmt.quantity(Quantity(None, "duration"))  # never started: no data
