from __future__ import annotations

import string

import pytest

from dashboards.texts import Texts
from reports.locale import LANGS, load_catalogue


def _fields(text: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(text) if f}


def test_dashboard_catalogues_have_the_same_keys_and_placeholders() -> None:
    english = load_catalogue("en", "dashboards")
    for lang in LANGS:
        catalogue = load_catalogue(lang, "dashboards")
        assert set(catalogue) == set(english), lang
        for key, text in english.items():
            assert _fields(catalogue[key]) == _fields(text), (lang, key)


def test_texts_format_and_refuse_unknown_languages() -> None:
    assert Texts("zh")("sla.miss_item", subject="chat-70b", indicator="延迟 p99") == "chat-70b（延迟 p99）"
    with pytest.raises(ValueError, match="unsupported language"):
        Texts("fr")  # type: ignore[arg-type]
