from __future__ import annotations

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from tests.dashboards.shown import tables

HERE = Path(__file__).parent
TIMEOUT_S = 30


def _texts(at: AppTest) -> str:
    parts = [e.value for e in (*at.title, *at.subheader, *at.caption, *at.markdown)]
    parts += [e.body for e in (*at.warning, *at.success, *at.info)]
    return "\n".join(str(p) for p in parts)


def _run(script: str, **state: object) -> AppTest:
    at = AppTest.from_file(str(HERE / script), default_timeout=TIMEOUT_S)
    for key, value in state.items():
        at.session_state[key] = value
    return at.run()


@pytest.mark.parametrize(
    ("lang", "needles", "metrics", "exact"),
    [
        ("en", ["GPU pool overview: November 2026", "Data as of 2026-12-01 00:59 UTC", "GPU-hours by scenario",
                "Idle GPU-hours by team", "west/eval", "chat-70b", "Vision", "Data completeness", "2h 15m ago"],
         {"Allocated GPU-hours": "15.9k", "Firing alerts": "1", "SLA results missed": "4 of 10",
          "Idle GPU-hours": "273", "GPU telemetry complete": "99.5%", "Pool allocated": "34.6%"},
         {"Allocated GPU-hours": "Exactly 15,933 GPU-hours.", "Idle GPU-hours": "Exactly 273 GPU-hours."}),
        ("zh", ["GPU 资源池概览：2026年11月", "数据截至 2026年12月01日 00:59 UTC", "各场景 GPU 小时",
                "各团队闲置 GPU 小时", "west/eval", "数据完整性", "2小时15分前"],
         {"已分配 GPU 小时": "1.59万", "正在触发的告警": "1", "未达标的 SLA 结果": "4/10"},
         {"已分配 GPU 小时": "精确值：15,933 GPU 小时。"}),
    ],
)
def test_overview_renders_in_both_languages(
    lang: str, needles: list[str], metrics: dict[str, str], exact: dict[str, str]
) -> None:
    at = _run("overview_script.py", lang=lang)
    assert not at.exception, [e.value for e in at.exception]
    assert not at.error
    text = _texts(at)
    for needle in needles:
        assert needle in text, needle
    shown = {m.label: m.value for m in at.metric}
    for label, value in metrics.items():
        assert shown.get(label) == value, (label, shown)
    helps = {m.label: m.help or "" for m in at.metric}  # a card shows 15.9k; its help, the exact figure
    for label, text in exact.items():
        assert helps[label].endswith(text), (label, helps[label])
    assert len(at.get("vega_lite_chart")) == 2  # GPU-hours by scenario, idle by team


def test_moments_are_shown_and_named_in_the_pools_time_zone() -> None:
    at = _run("overview_script.py", lang="zh", zone="Asia/Shanghai")
    text = _texts(at)
    assert "数据截至 2026年12月01日 08:59 Asia/Shanghai" in text  # 00:59 UTC
    assert "UTC" not in text


def test_sla_misses_are_listed_first_and_highlighted() -> None:
    at = _run("overview_script.py", lang="en")
    attention = tables(at)[0]  # static: the missed and at-risk results, each read whole
    assert list(attention.columns[:3]) == ["Status", "Scenario", "Subject"]
    assert list(attention["Status"])[:4] == ["missed"] * 4
    assert set(attention["Status"]) <= {"missed", "at risk"}
    assert "west/eval (queue wait p95)" in at.warning[0].body
    assert "chat-70b (latency p99)" in at.warning[0].body
    folded = next(e for e in at.expander if e.label.startswith("All SLA results"))
    assert folded.label == "All SLA results (15, of which 10 judged)"
    assert not tables(folded)  # built only when unfolded
    unfolded = _run("overview_script.py", lang="en", **{"overview.sla": True})
    full = tables(next(e for e in unfolded.expander if e.label.startswith("All SLA results")))[0]
    assert list(full["Status"])[:4] == ["missed"] * 4
    assert "met" in set(full["Status"])
    assert len(full) == 15 > len(attention)


def test_firing_alerts_and_episodes_are_shown() -> None:
    at = _run("overview_script.py", lang="zh", **{"overview.episodes": True})
    shown = tables(at)
    firing = next(t for t in shown if "摘要" in t.columns)
    assert list(firing["保护线"]) == ["推理保留容量"]
    folded = next(e for e in at.expander if e.label == "全部突破记录（2 条）")
    episodes = next(t for t in tables(folded) if "应对措施" in t.columns)
    assert len(episodes) == 2
    assert list(episodes["持续"]) == ["1小时15分", "45分钟"]


def test_an_empty_month_says_not_available_and_never_crashes() -> None:
    for lang, marker in (("en", "Not available"), ("zh", "暂无")):
        at = _run("overview_script.py", lang=lang, empty=True)
        assert not at.exception, [e.value for e in at.exception]
        infos = [i.body for i in at.info]
        assert len(infos) == 5  # usage, idle, SLA results, breaches, completeness
        assert all(marker in i for i in infos)
        no_data = {"en": "no data", "zh": "无数据"}[lang]
        values = [m.value for m in at.metric]
        assert values.count(no_data) == 4  # GPU-hours, allocation, idle, telemetry: never shown as 0


def test_the_app_switches_language_and_month() -> None:
    at = _run("app_script.py")
    assert not at.exception, [e.value for e in at.exception]
    assert at.title[0].value == "GPU pool overview: November 2026"
    at.sidebar.radio[0].set_value("zh").run()
    assert not at.exception
    assert at.title[0].value == "GPU 资源池概览：2026年11月"
    at.sidebar.selectbox[0].set_value("2026-10").run()
    assert not at.exception
    assert at.title[0].value == "GPU 资源池概览：2026年10月"



@pytest.mark.parametrize(("lang", "y_title"), [("en", "GPU-hours (allocated)"), ("zh", "GPU 小时（已分配）")])
def test_charts_have_axis_titles_with_units(lang: str, y_title: str) -> None:
    at = _run("overview_script.py", lang=lang)
    usage = json.loads(at.get("vega_lite_chart")[0].proto.spec)["encoding"]
    assert usage["y"]["title"] == y_title
    assert usage["x"]["title"] == {"en": "Scenario", "zh": "场景"}[lang]
    idle = json.loads(at.get("vega_lite_chart")[1].proto.spec)["encoding"]
    assert idle["y"]["title"] == {"en": "GPU-hours", "zh": "GPU 小时"}[lang]
