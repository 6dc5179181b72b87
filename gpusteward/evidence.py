"""Evidence as data: what an evaluator says about the rows behind a figure, as codes with typed values.

Evaluators (sla/) are pure and write no sentences: the `evidence` column of their tables holds a
list of parts, each a code (a `data.evidence.<code>` catalogue key of reports/) with its values,
stored as JSON:

    [{"code": "started", "v": {"n": {"q": 62, "k": "count"}}}, {"code": "longest_wait_job", "v": {...}}]

A value is one of: an `Amount` (a number and how it is written: `{"q": 3600, "k": "duration"}`),
a name or id written as it is (`{"t": "west/eval"}`), an instant (`{"at": "2026-10-12T09:00:00"}`,
naive UTC, written by the reader in the pool's time zone), a catalogue word (`{"w": "scenario",
"n": "training"}`), a list of names (`{"names": [...]}`) or nested parts (`{"parts": [...]}`).
Readers (reports/, the dashboards, alerts) write them in their language; text that is not such a
list (a month stored before this format) reads as one verbatim part.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, cast

AmountKind = Literal["duration", "percent", "multiple", "gpu_hours", "count", "gpus", "number"]
"""How a number is written (reports.model.QuantityKind): seconds as a duration, a 0..1 ratio as a percentage..."""

VERBATIM = "verbatim"
"""The code of a text stored before evidence was data: one part, written as it is."""


@dataclass(frozen=True)
class Amount:
    """A number and its kind; None or NaN is "no data", never zero."""

    value: float | None
    kind: AmountKind = "number"


@dataclass(frozen=True)
class Word:
    """A word of a catalogue group (`<group>.<name>`): a scenario, a job state, an indicator."""

    group: str
    name: str


@dataclass(frozen=True)
class Names:
    """Names or ids written as they are, as a list."""

    items: tuple[str, ...]


Value = Amount | str | datetime | Word | Names | tuple["Part", ...]


@dataclass(frozen=True)
class Part:
    """One piece of evidence: a code and its named values."""

    code: str
    values: tuple[tuple[str, Value], ...] = ()

    def get(self, name: str) -> Value | None:
        return dict(self.values).get(name)


def part(code: str, **values: Value | int | float | None) -> Part:
    """A part; plain ints become counts and floats plain numbers (use `Amount` for any other kind)."""
    return Part(code, tuple((name, _value(value)) for name, value in values.items()))


def _value(value: Value | int | float | None) -> Value:
    if value is None or isinstance(value, bool):
        return Amount(None if value is None else float(value), "count")
    if isinstance(value, int):
        return Amount(float(value), "count")
    if isinstance(value, float):
        return Amount(value, "number")
    return value


def count(n: float | None) -> Amount:
    return Amount(n, "count")


def duration(seconds: float | None) -> Amount:
    return Amount(seconds, "duration")


def ratio(share: float | None) -> Amount:
    return Amount(share, "percent")


def gpu_hours(hours: float | None) -> Amount:
    return Amount(hours, "gpu_hours")


def gpus(n: float | None) -> Amount:
    return Amount(n, "gpus")


def multiple(x: float | None) -> Amount:
    return Amount(x, "multiple")


# -- storage ---------------------------------------------------------------------------------------


def _naive_utc(moment: datetime) -> datetime:
    return moment if moment.tzinfo is None else moment.astimezone(UTC).replace(tzinfo=None)


def _encode_value(value: Value) -> dict[str, Any]:
    if isinstance(value, Amount):
        v = value.value
        return {"q": None if v is None or math.isnan(v) else v, "k": value.kind}
    if isinstance(value, str):
        return {"t": value}
    if isinstance(value, datetime):
        return {"at": _naive_utc(value).isoformat()}
    if isinstance(value, Word):
        return {"w": value.group, "n": value.name}
    if isinstance(value, Names):
        return {"names": list(value.items)}
    return {"parts": [_encode_part(p) for p in value]}


def _encode_part(p: Part) -> dict[str, Any]:
    return {"code": p.code, "v": {name: _encode_value(v) for name, v in p.values}}


def encode(parts: Iterable[Part]) -> str:
    """The parts as stored in an `evidence` column."""
    return json.dumps([_encode_part(p) for p in parts], ensure_ascii=False, separators=(",", ":"))


def _decode_value(data: Mapping[str, Any]) -> Value:
    if "q" in data:
        q = data["q"]
        return Amount(None if q is None else float(q), cast(AmountKind, data.get("k", "number")))
    if "at" in data:
        return datetime.fromisoformat(str(data["at"]))
    if "w" in data:
        return Word(str(data["w"]), str(data.get("n", "")))
    if "names" in data:
        return Names(tuple(str(n) for n in data["names"]))
    if "parts" in data:
        return tuple(_decode_part(p) for p in data["parts"])
    return str(data.get("t", ""))


def _decode_part(data: Mapping[str, Any]) -> Part:
    values = dict(data.get("v") or {})
    return Part(str(data["code"]), tuple((str(k), _decode_value(v)) for k, v in values.items()))


def stored_list(text: str, key: str) -> list[dict[str, Any]] | None:
    """The JSON list of objects that each carry `key` which `text` holds; None for any other text."""
    try:
        data = json.loads(text)
    except ValueError:
        return None
    if isinstance(data, list) and all(isinstance(d, dict) and key in d for d in data):
        return cast(list[dict[str, Any]], data)
    return None


def decode(text: str | None) -> tuple[Part, ...]:
    """The stored parts; other text (stored before evidence was data) is one `verbatim` part."""
    if not text:
        return ()
    data = stored_list(text, "code")
    if data is None:
        return (Part(VERBATIM, (("text", text),)),)
    return tuple(_decode_part(d) for d in data)


def joined(*texts: str) -> str:
    """Several stored evidence texts as one (each may be parts or verbatim text)."""
    return encode(p for t in texts for p in decode(t))
