"""The dashboard's words: its own small catalogue (dashboards/locales) plus the review's formatting."""

from __future__ import annotations

from reports.locale import LANGS, Formatter, Lang, load_catalogue

LANGUAGE_NAMES: dict[Lang, str] = {"en": "English", "zh": "中文"}


class Texts:
    """`texts("key", name=value)` for dashboard text; `texts.fmt` writes numbers, durations and terms."""

    def __init__(self, lang: Lang, zone: str = "UTC") -> None:
        if lang not in LANGS:
            raise ValueError(f"unsupported language {lang!r}; expected one of {', '.join(LANGS)}")
        self.lang = lang
        self.messages = load_catalogue(lang, "dashboards")
        self.zone = zone  # the pool's time zone: every moment is written, and named, in it
        self.fmt = Formatter(lang, zone=zone)

    def __call__(self, key: str, **params: object) -> str:
        return self.messages[key].format(**params)
