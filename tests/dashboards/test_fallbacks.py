"""A protection line's fallback written per language is shown in the dashboard's language."""

from __future__ import annotations

import json

from dashboards.frames import episodes_table
from dashboards.texts import Texts
from tests.dashboards.sample import sample_overview


def test_the_breach_table_shows_the_fallback_in_the_page_language() -> None:
    data = sample_overview()
    zh, en = Texts("zh"), Texts("en")
    zh_table, en_table = episodes_table(data, zh), episodes_table(data, en)
    assert zh_table is not None
    assert en_table is not None
    zh_texts = set(zh_table[zh("col.fallback")].to_list())
    en_texts = set(en_table[en("col.fallback")].to_list())
    assert any("抢占或暂停" in t for t in zh_texts), zh_texts
    assert all(t.startswith("Preempt or pause") for t in en_texts), en_texts


def test_an_alert_summary_is_said_in_the_page_language_from_its_figures() -> None:
    from dataclasses import replace

    from dashboards.frames import firing_table

    body = json.dumps({"annotations": {"summary": "east holds 9 GPUs", "worst_value": "9", "threshold": "12"}})
    data = replace(sample_overview(), alerts=[{**a, "body": body} for a in sample_overview().alerts])
    zh, en = Texts("zh"), Texts("en")
    zh_table, en_table = firing_table(data, zh), firing_table(data, en)
    assert zh_table is not None
    assert en_table is not None
    assert zh_table[zh("col.summary")].to_list() == ["east 的「推理保留容量」：最差 9，阈值 12"]
    assert en_table[en("col.summary")].to_list()[0].endswith("on east: worst 9 against a threshold of 12")
    # an alert recorded before the figures were sent keeps its summary
    old = firing_table(sample_overview(), zh)
    assert old is not None
    assert old[zh("col.summary")].to_list() == [sample_overview().alerts[0]["summary"]]
