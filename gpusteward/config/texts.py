"""Text a user writes in the config (a protection line's fallback), in one language or in several.

In the file it is a plain string, or a table keyed by language:

    fallback = "Pause low-priority training."
    fallback = { en = "Pause low-priority training.", zh-CN = "暂停低优先级训练。" }

`zh` and `zh-CN` are the same language. The English text (else the first given) is the default:
alerts, logs and any language the table lacks use it.
"""

from __future__ import annotations

from dataclasses import dataclass

LANGUAGE_KEYS = {"en": "en", "zh": "zh", "zh-CN": "zh", "zh-cn": "zh"}
"""Keys accepted in a text table, and the language each one means."""


@dataclass(frozen=True)
class LocalText:
    default: str
    translations: tuple[tuple[str, str], ...] = ()
    """(language, text) pairs, the default's language included."""

    def get(self, lang: str) -> str:
        """The text in `lang` ("en", "zh"), else the default."""
        return next((text for key, text in self.translations if key == lang), self.default)

    def __str__(self) -> str:
        return self.default

    @classmethod
    def plain(cls, text: str) -> LocalText:
        return cls(text)

    @classmethod
    def parse(cls, value: object) -> LocalText:
        """From the file's value: a string, or a table of language -> string. Raises ValueError."""
        if isinstance(value, str):
            return cls(value)
        if not isinstance(value, dict) or not value:
            raise ValueError("expected a string, or a table of language -> string such as {en = \"...\", zh = \"...\"}")
        pairs: list[tuple[str, str]] = []
        for key, text in value.items():
            lang = LANGUAGE_KEYS.get(str(key))
            if lang is None:
                raise ValueError(f"unknown language {key!r}; expected one of {', '.join(LANGUAGE_KEYS)}")
            if not isinstance(text, str):
                raise ValueError(f"{key}: expected a string")
            if any(lang == seen for seen, _ in pairs):
                raise ValueError(f"{key}: language {lang} given twice")
            pairs.append((lang, text))
        default = next((text for lang, text in pairs if lang == "en"), pairs[0][1])
        return cls(default, tuple(pairs))
