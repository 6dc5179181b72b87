"""AppTest of the heatmap and the drill-down pages over the drill sample, opened as the review's and the
alerts' links open them (query parameters), in both languages; the figures shown are worked out here."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboards.app import SCREENS
from dashboards.texts import Texts
from reports.model import Quantity
from tests.dashboards.shown import number, tables

HERE = Path(__file__).parent
TIMEOUT_S = 30


def _open(page: str, lang: str = "en", **params: str) -> AppTest:
    at = AppTest.from_file(str(HERE / "drill_script.py"), default_timeout=TIMEOUT_S)
    at.session_state["lang"] = lang
    team = params.pop("_team", None)
    if team:
        at.session_state["_team"] = team
    at.run()
    at.switch_page(str(SCREENS / f"{page}.py"))
    at.query_params = dict(params)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: str(m.value) for m in at.metric}


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_teams_idle_jobs_open_from_the_link(lang: str) -> None:
    at = _open("jobs", lang, month="2026-11", team="research", focus="idle")
    tx = Texts("zh" if lang == "zh" else "en")
    assert at.sidebar.multiselect(key="f_teams").value == ["research"]
    jobs = next(t for t in tables(at) if tx("col.job") in t.columns)
    # research's sessions, most idle GPU-hours first (idle + idle-held minutes of IDLE_BY_JOB / 60)
    assert jobs[tx("col.job")].tolist() == ["31001", "31002", "31003"]
    assert [number(v) for v in jobs[tx("col.idle")]] == [130.0, 110.0, 3.33]
    assert at.query_params["focus"] == "idle"
    assert at.query_params["team"] == "research"
    assert at.query_params["sort"] == "idle"


def test_the_job_list_sorts_and_sums_as_the_review() -> None:
    at = _open("jobs", month="2026-11", sort="gpu_hours")
    tx = Texts("en")
    jobs = next(t for t in tables(at) if tx("col.job") in t.columns)
    hours = dict(zip(jobs[tx("col.job")], map(number, jobs[tx("jobs.col.gpu_hours")]), strict=True))
    assert hours["20010"] == 8 * 23 * 24  # running since 8 November: to the month's end
    assert hours["20011"] == 2 * 2 + 2 * 6  # two records
    assert hours["31001"] == 4 * 40
    assert list(hours.values()) == sorted(hours.values(), reverse=True)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_one_jobs_page_shows_its_figures(lang: str) -> None:
    at = _open("job", lang, month="2026-11", job="east/20011")
    tx = Texts("zh" if lang == "zh" else "en")
    shown = _metrics(at)
    assert shown[tx("jobs.col.gpu_hours")] == tx.fmt.quantity(Quantity(16.0, "gpu_hours"))
    # 50 minutes before the first run (eligible 09:10, start 10:00), 2 hours before the requeued one
    assert shown[tx("jobs.col.wait")] == tx.fmt.quantity(Quantity(2 * 3600 + 50 * 60, "duration"))
    assert shown[tx("jobs.col.outcome")] == tx("job.state.FAILED")
    assert shown[tx("jobs.col.exit")] == tx("job.exit_signal", signal=9)
    assert shown[tx("jobs.col.preemptions")] == "1"
    records = next(t for t in tables(at) if tx("job.col.nodes") in t.columns)
    assert records[tx("jobs.col.outcome")].tolist() == [tx("job.state.PREEMPTED"), tx("job.state.FAILED")]
    ledger = next(t for t in tables(at) if tx("job.col.action") in t.columns)
    assert ledger[tx("job.col.role")].tolist() == [tx("job.role.lost")]
    assert ledger[tx("job.col.other")].tolist() == ["31003"]
    assert at.query_params["job"] == "east/20011"
    assert not [i for i in at.info if tx("job.no_telemetry") in str(i.body)]


def test_a_team_scoped_viewer_cannot_open_another_teams_job() -> None:
    at = _open("job", _team="vision", month="2026-11", job="west/31001")
    tx = Texts("en")
    assert any(tx("job.not_found", job="west/31001") in str(w.body) for w in at.warning)
    assert at.selectbox(key="job_pick").value == "east/20011"  # vision's only job


def test_the_job_picker_filters_and_lists_a_few_jobs() -> None:
    at = _open("job", month="2026-11")
    tx = Texts("en")
    assert at.selectbox(key="job_pick").options == ["west/20010", "west/31001", "west/31002", "east/31003",
                                                    "east/20011"]  # by GPU-hours
    at.selectbox(key="job_account").set_value("research").run()
    assert at.selectbox(key="job_pick").options == ["west/31001", "west/31002", "east/31003"]
    assert at.selectbox(key="job_pick").value == "west/31001"  # a filter changed: its first job
    assert at.query_params["job"] == "west/31001"
    assert any(tx("job.listed", shown=3, total=3, sort=tx("job_sort.gpu_hours")) in str(c.value) for c in at.caption)
    at.selectbox(key="job_account").set_value(None).run()
    at.selectbox(key="job_state").set_value("FAILED").run()
    assert at.selectbox(key="job_pick").options == ["east/20011"]
    assert _metrics(at)[tx("jobs.col.exit")] == tx("job.exit_signal", signal=9)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_job_id_typed_opens_that_job(lang: str) -> None:
    at = _open("job", lang, month="2026-11")
    tx = Texts("zh" if lang == "zh" else "en")
    at.selectbox(key="job_state").set_value("COMPLETED").run()
    at.text_input(key="job_find").input("20011").run()
    assert at.selectbox(key="job_pick").value == "east/20011"  # listed first, though the filter leaves it out
    assert at.selectbox(key="job_pick").options[0] == "east/20011"
    assert at.query_params["job"] == "east/20011"
    assert _metrics(at)[tx("jobs.col.outcome")] == tx("job.state.FAILED")
    at.text_input(key="job_find").input("4242").run()
    assert any(tx("job.not_found", job="4242") in str(w.body) for w in at.warning)
    assert at.selectbox(key="job_pick").value == "east/20011"  # the job shown stays


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_heatmap_of_a_cluster_and_day(lang: str) -> None:
    at = _open("heatmap", lang, month="2026-11", cluster="east", day="2026-11-10")
    tx = Texts("zh" if lang == "zh" else "en")
    shown = _metrics(at)
    assert shown[tx("heatmap.gpus")] == "2"
    # hour 10: 80% and 0% (zero is data), hour 11: 80% and nothing: (48 + 0 + 48) / 180 minutes
    assert shown[tx("heatmap.mean")] == tx.fmt.quantity(Quantity(96 / 180, "percent"))
    assert shown[tx("heatmap.cells_no_data")] == tx("heatmap.cells_value", missing=2 * 24 - 3, total=2 * 24)
    assert at.selectbox(key="hm_cluster").value == "east"
    assert at.query_params["day"] == "2026-11-10"


def test_choosing_another_cluster_sets_the_filter() -> None:
    at = _open("heatmap", month="2026-11", cluster="east", day="2026-11-10")
    at.selectbox(key="hm_cluster").set_value("west").run()
    assert at.sidebar.multiselect(key="f_clusters").value == ["west"]
    assert at.query_params["cluster"] == "west"
    assert _metrics(at)[Texts("en")("heatmap.cells_no_data")] == Texts("en")("heatmap.cells_value", missing=48,
                                                                              total=48)
