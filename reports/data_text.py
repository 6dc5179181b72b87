"""Text a producer below reports/ writes in English from a fixed template, given in every language.

Some detail strings come from sla/ as English sentences around data (`longest gap: <host> GPU 3, ...`).
Each such template is a catalogue key of a `data.<producer>.*` group; its English text is the
template itself, with `{name}` where data goes. `data_text` matches the string against the English
templates and fills the same data into each language's text. A string no template matches is
written as it is (English), which tests/reports/test_chinese_only.py would catch.
"""

from __future__ import annotations

import functools
import re

from reports.locale import LANGS, load_catalogue
from reports.model import Text


@functools.cache
def _templates(group: str) -> tuple[tuple[str, re.Pattern[str]], ...]:
    english = load_catalogue("en")
    out = []
    for key, template in english.items():
        if not key.startswith(f"{group}."):
            continue
        parts = re.split(r"\{(\w+)\}", template)
        pattern = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>.+?)" for i, p in enumerate(parts))
        out.append((key, re.compile(f"^{pattern}$", re.S)))
    return tuple(out)


def evidence_text(text: str, lang: str, join: str) -> str:
    """An evidence pointer from sla/ ("; "-separated parts) in `lang`: each part a `data.evidence.*`
    template matches is given in that language, the others (ids, `key=value` pointers) as they are."""
    return join.join(dict(data_text(part, "data.evidence").translations).get(lang, part) for part in text.split("; "))


def _fill(template: str | None, values: dict[str, str], written: str) -> str:
    return written if template is None else template.format(**values)


def data_text(text: str, group: str) -> Text:
    """`text` as a Text cell, with its translations when one of the group's templates matches it."""
    for key, pattern in _templates(group):
        found = pattern.match(text)
        if found is not None:
            # a language whose catalogue lacks the key keeps the text as written (the catalogue test
            # fails on such a gap; a review is never lost to it)
            pairs = tuple((lang, _fill(load_catalogue(lang).get(key), found.groupdict(), text)) for lang in LANGS)
            return Text(text, translations=pairs)
    return Text(text)
