"""AppTest for every page of the app, in both languages, over the sample read model."""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboards.app import PAGES, SCREENS
from tests.dashboards.shown import number, tables

HERE = Path(__file__).parent
TIMEOUT_S = 30
TITLES = {
    "en": {"overview": "GPU pool overview", "scenarios": "Scenarios and SLAs", "queues": "Queues and teams",
           "inference": "Inference services", "idle": "Idle and reclaim", "preemption": "Preemption ledger",
           "review": "Monthly review", "plans": "Quota plans", "alerts": "Alerts", "showback": "Showback"},
    "zh": {"overview": "GPU 资源池概览", "scenarios": "场景与 SLA", "queues": "队列与团队", "inference": "推理服务",
           "idle": "闲置与回收", "preemption": "抢占台账", "review": "月度复盘", "plans": "配额计划", "alerts": "告警",
           "showback": "成本分摊"},
}


def _app(**state: object) -> AppTest:
    at = AppTest.from_file(str(HERE / "app_script.py"), default_timeout=TIMEOUT_S)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


def _texts(at: AppTest) -> str:
    parts = [e.value for e in (*at.title, *at.subheader, *at.caption, *at.markdown)]
    parts += [e.body for e in (*at.warning, *at.success, *at.info)]
    return "\n".join(str(p) for p in parts)


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_every_page_renders_with_its_data_age(lang: str) -> None:
    at = _app(lang=lang)
    for page in PAGES:
        at.switch_page(str(SCREENS / f"{page}.py")).run()
        assert not at.exception, (page, [e.value for e in at.exception])
        assert not at.error, page
        assert at.title[0].value.startswith(TITLES[lang][page]), (page, at.title[0].value)
        text = _texts(at)
        assert ("Data as of" if lang == "en" else "数据截至") in text, page
        assert ("Read model published" if lang == "en" else "读取模型发布于") in text, page


def test_pages_show_their_tables() -> None:
    at = _app(lang="en")
    at.switch_page(str(SCREENS / "queues.py")).run()
    share = next(t for t in tables(at) if "Entitled share" in t.columns)
    assert "Vision" in set(share["Team"])
    folded = next(e for e in at.expander if e.label == "Every job array (1)")
    assert not tables(folded)  # built only when unfolded
    at.session_state["queues.arrays"] = True
    at.run()
    arrays = next(t for t in tables(at) if "Array" in t.columns)
    assert arrays.to_dict("records") == [{
        "Array": "4101_[…]", "Job name": "sweep-lr", "Queue": "east/train", "Team": "Vision", "Tasks": "200",
        "Completed": "190", "Failed": "6", "Cancelled": "3", "Other / open": "1", "p50 wait": "7m",
        "Longest wait": "1h 30m",
        "Waited longest": "4101_17",
    }]
    at.switch_page(str(SCREENS / "inference.py")).run()
    services = tables(at)[0]
    assert "chat-70b" in set(services["Service"])
    at.switch_page(str(SCREENS / "preemption.py")).run()
    assert "Preemptions by day" in _texts(at)  # the records preempted per day (tests/dashboards/test_charts.py)
    at.switch_page(str(SCREENS / "review.py")).run()
    assert "Summary" in _texts(at)
    at.switch_page(str(SCREENS / "alerts.py")).run()
    alerts = tables(at)[0]
    assert list(alerts["Status"]) == ["firing"]
    assert "no control API" in _texts(at)  # actions are off without an API address and token


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_alerts_page_leads_with_what_fires_and_folds_the_resolved(lang: str) -> None:
    at = _app(lang=lang)
    at.switch_page(str(SCREENS / "alerts.py")).run()
    status, fingerprint = ("Status", "Fingerprint") if lang == "en" else ("状态", "指纹")
    firing = tables(at)[0]
    assert list(firing[status]) == ["firing" if lang == "en" else "触发中"]
    assert list(firing[fingerprint]) == ["a1b2c3d4e5f6"]
    by_line = tables(at)[1].to_dict("records")
    if lang == "en":
        assert by_line == [{"Line": "Training preemption ratio", "Severity": "Warning", "Alerts": "1",
                            "Subjects": "east", "First began (UTC)": "2026-11-12 09:00",
                            "Last resolved (UTC)": "2026-11-12 17:30"}]
    else:
        assert by_line[0]["保护线"] == "训练抢占比例"
    label = "Every resolved alert (1)" if lang == "en" else "全部已恢复的告警（1 条）"
    folded = next(e for e in at.expander if e.label == label)
    assert not tables(folded)  # built only when unfolded
    at.session_state["alerts_resolved"] = True
    at.run()
    resolved = tables(next(e for e in at.expander if e.label == label))[0]
    assert list(resolved[status]) == ["resolved" if lang == "en" else "已恢复"]  # its latest record, not the first
    assert list(resolved[fingerprint]) == ["0f1e2d3c4b5a"]


def test_filters_narrow_every_page() -> None:
    at = _app(lang="en")
    at.switch_page(str(SCREENS / "idle.py")).run()
    before = len(tables(at)[1])
    at.sidebar.multiselect(key="f_teams").set_value(["vision"]).run()
    assert not at.exception
    teams = tables(at)[0]
    assert set(teams["Team"]) == {"Vision"}
    assert len(tables(at)[1]) <= before
    at.switch_page(str(SCREENS / "alerts.py")).run()
    assert "Not available" in at.info[0].body  # protection-line alerts are the platform's, not a team's


def test_a_trusted_team_header_scopes_the_view_read_only() -> None:
    at = _app(lang="en", _team="nlp", _api="http://127.0.0.1:9", _token="t")
    assert not at.exception
    assert not at.sidebar.multiselect(key="f_clusters").value
    assert "Showing team NLP only" in "\n".join(c.value for c in at.sidebar.caption)
    at.switch_page(str(SCREENS / "plans.py")).run()
    assert not at.button  # read-only: no approve/reject
    assert "read-only" in _texts(at)
    at.switch_page(str(SCREENS / "queues.py")).run()
    share = next(t for t in tables(at) if "Entitled share" in t.columns)
    assert set(share["Team"]) == {"NLP"}


def test_the_month_picker_switches_the_period() -> None:
    at = _app(lang="zh")
    at.sidebar.selectbox(key="month").set_value("2026-10").run()
    assert not at.exception
    assert at.title[0].value == "GPU 资源池概览：2026年10月"


def test_showback_shows_each_team_and_a_team_sees_only_its_own_rows() -> None:
    at = _app(lang="en")
    at.switch_page(str(SCREENS / "showback.py")).run()
    assert not at.exception
    teams = tables(at)[0]
    assert set(teams["Team"]) == {"NLP", "Vision", "Research", "Unallocated capacity"}
    assert round(sum(map(number, teams["Total"])), 2) == 44165.42  # every row of the fixture, unallocated included
    assert "charged to no team" in _texts(at)
    folded = next(e for e in at.expander if e.label == "Every row (6)")
    assert not tables(folded)  # built only when unfolded
    at.session_state["showback.rows"] = True
    at.run()
    assert {"NLP", "Vision", "Research"} <= set(tables(at)[1]["Team"])
    at.sidebar.multiselect(key="f_teams").set_value(["vision"]).run()
    at.session_state["showback.rows"] = True  # its label (the count) changed with the filter: a new fold, closed
    at.run()
    assert set(tables(at)[0]["Team"]) == {"Vision"}
    assert set(tables(at)[1]["Team"]) == {"Vision"}
