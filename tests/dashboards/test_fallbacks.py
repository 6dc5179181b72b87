"""A protection line's fallback written per language is shown in the dashboard's language."""

from __future__ import annotations

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
