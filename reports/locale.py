"""Message catalogues and locale formatting of numbers, durations, percentages and moments.

Catalogues are flat JSON objects (key -> text with `{name}` placeholders) under
`<package>/locales/<lang>.json`. Every language has the same keys (tested).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from functools import cache
from importlib import resources
from typing import Literal
from zoneinfo import ZoneInfo

from gpusteward.domain import Month
from reports.model import Cell, Message, Moment, Phrases, Quantity, Term, Terms, Text, Verdict

Lang = Literal["en", "zh"]
LANGS: tuple[Lang, ...] = ("en", "zh")


@cache
def load_catalogue(lang: str, package: str = "reports") -> Mapping[str, str]:
    """The catalogue of one language; raise ValueError for a language that has none."""
    if lang not in LANGS:
        raise ValueError(f"no catalogue for language {lang!r}; expected one of {', '.join(LANGS)}")
    # One name per joinpath: a namespace package's MultiplexedPath takes only one (Python 3.11).
    text = (resources.files(package) / "locales" / f"{lang}.json").read_text(encoding="utf-8")
    data = json.loads(text)
    if not isinstance(data, dict) or not all(isinstance(v, str) for v in data.values()):
        raise ValueError(f"{package}/locales/{lang}.json must map keys to strings")
    return data


def _plain(text: str) -> str:
    return text


class Formatter:
    """Writes cells and messages in one language.

    `escape` protects data text (names, evidence) for the output format; `strong` emphasises it.
    Catalogue text is trusted and written as it is.
    """

    def __init__(
        self,
        lang: Lang,
        *,
        escape: Callable[[str], str] = _plain,
        strong: Callable[[str], str] = _plain,
        zone: str = "UTC",
    ) -> None:
        self.lang = lang
        self.zone = zone  # moments (naive UTC, or aware) are written in this time zone
        self.messages = load_catalogue(lang)
        self._escape = escape
        self._strong = strong

    # -- catalogue -----------------------------------------------------------------------------

    def t(self, key: str, **params: object) -> str:
        """The text of a key with its placeholders filled; KeyError for a key the catalogue lacks."""
        return self.messages[key].format(**params)

    def term(self, group: str, name: str | None) -> str:
        if name is None:
            return self.t("common.none")
        return self.messages.get(f"{group}.{name}", self._escape(name))

    # -- numbers -------------------------------------------------------------------------------

    def number(self, value: float, decimals: int = 0) -> str:
        text = f"{value:,.{decimals}f}"
        group, point = self.messages["number.group"], self.messages["number.decimal"]
        return text.replace(",", "\0").replace(".", point).replace("\0", group)

    def trimmed(self, value: float, decimals: int) -> str:
        """A number with up to `decimals` decimals, trailing zeros dropped."""
        text = self.number(value, decimals)
        point = self.messages["number.decimal"]
        if decimals and point in text:
            text = text.rstrip("0").rstrip(point)
        return text

    def compact(self, value: float | None) -> str:
        """A number short enough for a headline card: three significant digits and the language's own
        large-number unit (`34.1k`, `1.48k`; `3.41万`, `1,478`); written in full below the first unit.

        The units come from the catalogue's `number.compact_units` (`1000=k 1000000=M ...`;
        `10000=万 100000000=亿`): Chinese counts large numbers in ten thousands, so 34,099 is 3.41万.
        """
        if value is None or math.isnan(value):
            return self.t("common.no_data")
        units = sorted((float(size), suffix) for size, _, suffix in
                       (unit.partition("=") for unit in self.messages["number.compact_units"].split()))
        magnitude = abs(value)
        in_full = round(magnitude) if magnitude >= 100 else magnitude  # 999.6 is written 1k, not 1,000
        fitting = [i for i, (size, _) in enumerate(units) if in_full >= size]
        if not fitting:
            return self.trimmed(value, 0 if magnitude >= 100 else 1)
        index = fitting[-1]
        for step in (index, index + 1):  # 999,950 rounds to 1,000k: write it as 1M instead
            size, suffix = units[min(step, len(units) - 1)]
            decimals = max(0, 2 - math.floor(math.log10(magnitude / size)))
            rounded = round(magnitude / size, decimals)
            if step + 1 >= len(units) or rounded * size < units[step + 1][0]:
                break
        sign = "-" if value < 0 else ""
        return sign + self.trimmed(rounded, decimals) + suffix

    def percent(self, ratio: float) -> str:
        """A 0..1 ratio as a percentage; never rounds a partial value to 0% or 100%."""
        pct = ratio * 100
        decimals = 1
        while decimals < 3 and 0 < ratio < 1 and round(pct, decimals) in (0.0, 100.0):
            decimals += 1
        return self.t("unit.percent", n=self.number(pct, decimals))

    def duration(self, seconds: float) -> str:
        """`2h 15m` / `2小时15分`: two largest units; seconds and milliseconds below a minute."""
        sign = "-" if seconds < 0 else ""
        s = abs(seconds)
        if s == 0:
            return self.t("duration.s", n=0)  # a wait of nothing is "0s", not a measurement in milliseconds
        if s < 1:
            ms = round(s * 1000)
            return sign + (self.t("duration.ms", n=ms) if ms < 1000 else self.t("duration.s", n=1))
        if round(s, 1) < 60:
            return sign + self.t("duration.s", n=self.trimmed(s, 1))
        parts: list[tuple[str, int]]
        if round(s) < 3600:
            minutes, secs = divmod(round(s), 60)
            parts = [("m", minutes), ("s", secs)]
        elif round(s / 60) < 1440:
            hours, minutes = divmod(round(s / 60), 60)
            parts = [("h", hours), ("m", minutes)]
        else:
            days, hours = divmod(round(s / 3600), 24)
            parts = [("d", days), ("h", hours)]
        if parts[1][1] == 0:
            unit, n = parts[0]
            return sign + self.t(f"duration.{unit}_alone", n=self.number(n))
        joined = self.t("duration.join").join(self.t(f"duration.{u}", n=self.number(n)) for u, n in parts)
        return sign + joined

    def quantity(self, q: Quantity) -> str:
        if q.value is None or math.isnan(q.value):
            return self.t("common.no_data")
        v = q.value
        if q.kind == "duration":
            text = self.duration(v)
        elif q.kind == "percent":
            text = self.percent(v)
        elif q.kind == "multiple":
            text = self.t("unit.multiple", n=self.number(v, 2))
        elif q.kind == "gpu_hours":
            text = self.t("unit.gpu_hours", n=self.number(v, 0 if abs(v) >= 100 else 1))
        elif q.kind == "gpus":
            text = self.t("unit.gpus", n=self.trimmed(v, 1))
        elif q.kind == "count":
            text = self.number(v)
        elif q.kind == "money":
            text = self.number(v, 2)
        elif q.kind == "kwh":
            text = self.t("unit.kwh", n=self.number(v, 0 if abs(v) >= 100 else 1))
        else:
            text = self.trimmed(v, 2)
        return self.t(f"bound.{q.bound}", v=text) if q.bound else text

    # -- time ----------------------------------------------------------------------------------

    def moment(self, value: datetime | None) -> str:
        if value is None:
            return self.t("common.no_data")
        if value.tzinfo is not None or self.zone != "UTC":
            value = (value if value.tzinfo is not None else value.replace(tzinfo=UTC)).astimezone(ZoneInfo(self.zone))
        return self.t(
            "datetime",
            y=value.year, mo=f"{value.month:02d}", d=f"{value.day:02d}",
            h=f"{value.hour:02d}", mi=f"{value.minute:02d}",
        )

    def period(self, month: Month) -> str:
        """The review's period in the month's time zone, with its UTC instants when the zone is another."""
        utc = ""
        if month.tz != "UTC":
            utc = self.t("review.period_utc", start=Formatter(self.lang).moment(month.start),
                         end=Formatter(self.lang).moment(month.end))
        local = Formatter(self.lang, zone=month.tz)
        return self.t("review.period", start=local.moment(month.start), end=local.moment(month.end), utc=utc,
                      zone=month.tz)

    def month(self, month: Month) -> str:
        return self.t("month", y=month.year, m=month.month, name=self.t(f"month.{month.month}"))

    # -- cells and messages --------------------------------------------------------------------

    def cell(self, cell: Cell) -> str:
        if isinstance(cell, Quantity):
            return self.quantity(cell)
        if isinstance(cell, Text):
            text = self._escape(dict(cell.translations).get(self.lang, cell.value))
            return self._strong(text) if cell.strong and text else text
        if isinstance(cell, Term):
            return self.term(cell.group, cell.name)
        if isinstance(cell, Terms):
            if not cell.names:
                return self.t("common.none")
            return self.t("list.join").join(self.term(cell.group, n) for n in cell.names)
        if isinstance(cell, Moment):
            if cell.labelled and cell.value is not None:
                return self.t("datetime.labelled", at=self.moment(cell.value), zone=self._escape(self.zone))
            return self.moment(cell.value)
        if isinstance(cell, Phrases):
            return self.t(f"phrases.{cell.separator}").join(self.message(m) for m in cell.messages)
        return self.verdict(cell)

    def verdict(self, verdict: Verdict) -> str:
        if verdict.met is True:
            return self.t("verdict.met")
        if verdict.met is False:
            return self._strong(self.t("verdict.missed"))
        return self.t(f"verdict.{verdict.why or 'no_objective'}")

    def message(self, message: Message) -> str:
        """The message in this language; `<key>.one` is used instead when its `count` is exactly 1."""
        key = message.key
        count = dict(message.params).get("count")
        if isinstance(count, Quantity) and count.value == 1 and f"{key}.one" in self.messages:
            key = f"{key}.one"
        return self.t(key, **{name: self.cell(c) for name, c in message.params})
