"""Config texts a user writes per language: a plain string still works; a table gives each language."""

from __future__ import annotations

import pytest

from gpusteward.config import load_config_text
from gpusteward.config.texts import LocalText
from gpusteward.errors import ConfigError

LINE = '[[clusters]]\nname = "east"\n[[protection.inference_reserve]]\ncluster = "east"\nmin_gpus = 4\n'


def test_a_plain_string_is_the_text_in_every_language() -> None:
    config = load_config_text(LINE + 'fallback = "Pause training."\n')
    fallback = config.protection.inference_reserve[0].fallback
    assert (str(fallback), fallback.get("en"), fallback.get("zh")) == ("Pause training.",) * 3


def test_a_table_gives_each_language_and_english_is_the_default() -> None:
    config = load_config_text(LINE + 'fallback = { zh-CN = "暂停训练。", en = "Pause training." }\n')
    fallback = config.protection.inference_reserve[0].fallback
    assert str(fallback) == "Pause training."
    assert fallback.get("zh") == "暂停训练。"
    assert LocalText.parse({"zh": "只有中文"}).default == "只有中文"


@pytest.mark.parametrize(
    ("value", "words"),
    [("{ fr = \"x\" }", "unknown language 'fr'"), ("{ zh = \"a\", zh-CN = \"b\" }", "given twice"),
     ("{ en = 3 }", "expected a string"), ("3", "expected a string, or a table")],
)
def test_bad_texts_say_what_is_wrong(value: str, words: str) -> None:
    with pytest.raises(ConfigError, match="fallback") as caught:
        load_config_text(LINE + f"fallback = {value}\n")
    assert words in str(caught.value)
