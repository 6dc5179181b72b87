"""An alert links to the dashboard page and filter that show it: in the webhook payload's generatorURL (as
Prometheus links its graph) and a `dashboard_url` annotation; never without `[dashboard] url`."""

from __future__ import annotations

from dataclasses import replace

from alerts.model import alerts_from_episodes
from dashboards.alert_links import destination
from gpusteward.config.schema import DashboardConfig
from tests.alerts.helpers import END, config, episodes

BASE = "https://gpus.example.org/steward"


def test_no_url_no_link() -> None:
    (alert,) = alerts_from_episodes(episodes({}), config(), data_end=END)
    assert alert.to_dict()["generatorURL"] == ""
    assert "dashboard_url" not in alert.annotations


def test_the_payload_names_the_page_and_filter() -> None:
    with_url = replace(config(), dashboard=DashboardConfig(url=BASE))
    reserve, queue = alerts_from_episodes(
        episodes({}, {"line": "queue_wait", "subject": "west/eval"}), with_url, data_end=END)
    # sorted by line: inference_reserve (east, began 2026-03-04), then queue_wait
    assert reserve.to_dict()["generatorURL"] == f"{BASE}/heatmap?month=2026-03&cluster=east&day=2026-03-04"
    assert reserve.annotations["dashboard_url"] == reserve.generator_url
    assert queue.generator_url == f"{BASE}/queues?month=2026-03&cluster=west"


def test_the_day_is_the_pools() -> None:
    shanghai = replace(config(), timezone="Asia/Shanghai", dashboard=DashboardConfig(url=BASE))
    late = episodes({"start": END.replace(hour=20), "end": END.replace(hour=21)})  # 04:00 on the 5th in Shanghai
    (alert,) = alerts_from_episodes(late, shanghai, data_end=END.replace(hour=21))
    assert alert.generator_url.endswith("day=2026-03-05")


def test_the_alerts_page_opens_the_same_page() -> None:
    row = {"line": "inference_reserve", "subject": "east", "starts_at": END.replace(hour=20)}
    target = destination(row, "2026-03", "Asia/Shanghai")
    assert (target.page, target.query()) == ("heatmap", {"month": "2026-03", "cluster": "east", "day": "2026-03-05"})


def test_chat_messages_carry_the_link() -> None:
    from alerts.chat import markdown
    from reports.locale import Formatter

    with_url = replace(config(), dashboard=DashboardConfig(url=BASE))
    (alert,) = alerts_from_episodes(episodes({}), with_url, data_end=END)
    assert f"**dashboard**: {alert.generator_url}" in markdown([alert], Formatter("en"))
    assert f"**仪表盘**: {alert.generator_url}" in markdown([alert], Formatter("zh"))
    (plain,) = alerts_from_episodes(episodes({}), config(), data_end=END)
    assert "dashboard" not in markdown([plain], Formatter("en"))
