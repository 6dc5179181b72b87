from __future__ import annotations

import json
import string
from importlib import resources

import pytest

from gpusteward.domain import Scenario
from gpusteward.indicators import INDICATORS
from reports.locale import LANGS, Formatter, load_catalogue


def _placeholders(text: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(text) if name}


def test_every_language_has_the_same_keys() -> None:
    english = load_catalogue("en")
    for lang in LANGS:
        keys = set(load_catalogue(lang))
        assert keys == set(english), f"{lang}: missing {set(english) - keys}, extra {keys - set(english)}"


FORMAT_KEYS = {"month": {"y", "m", "name"}}
"""Patterns where a language picks the fields it needs (a month name, or its number)."""


def test_every_message_has_the_same_placeholders_in_every_language() -> None:
    english = load_catalogue("en")
    for lang in LANGS:
        catalogue = load_catalogue(lang)
        for key, text in english.items():
            if key in FORMAT_KEYS:
                assert _placeholders(catalogue[key]) <= FORMAT_KEYS[key], f"{lang}: {key}"
            else:
                assert _placeholders(catalogue[key]) == _placeholders(text), f"{lang}: {key}"


def test_catalogues_are_plain_json_objects_without_duplicate_keys() -> None:
    def no_duplicates(pairs: list[tuple[str, object]]) -> dict[str, object]:
        keys = [k for k, _ in pairs]
        assert len(keys) == len(set(keys)), [k for k in keys if keys.count(k) > 1]
        return dict(pairs)

    for lang in LANGS:
        text = resources.files("reports").joinpath("locales", f"{lang}.json").read_text(encoding="utf-8")
        json.loads(text, object_pairs_hook=no_duplicates)


@pytest.mark.parametrize("lang", LANGS)
def test_every_scenario_and_indicator_has_a_name(lang: str) -> None:
    catalogue = load_catalogue(lang)
    for scenario in Scenario:
        assert f"scenario.{scenario.value}" in catalogue
    for name in INDICATORS:
        assert f"indicator.{name}" in catalogue


def test_unknown_language_is_refused() -> None:
    with pytest.raises(ValueError, match="no catalogue"):
        load_catalogue("fr")


def test_unknown_terms_are_written_as_they_are() -> None:
    fmt = Formatter("zh")
    assert fmt.term("indicator", "gpu_temperature_p99") == "gpu_temperature_p99"
    assert fmt.term("scenario", "training") == "训练"
