"""The config reference: every field's path, type, default and help, read from the schema."""

from __future__ import annotations

import dataclasses
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import timedelta
from decimal import Decimal
from enum import Enum
from typing import Any

from gpusteward.config.schema import FIELD_ALIASES, Config
from gpusteward.config.texts import LocalText
from gpusteward.durations import format_duration
from gpusteward.indicators import INDICATORS


@dataclass(frozen=True)
class FieldDoc:
    path: str  # e.g. `clusters[].timezone`, `teams.<name>.entitled_share`
    type: str
    default: str  # "required" when there is none
    help: str


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin is typing.Literal:
        return " or ".join(repr(a) for a in args)
    if origin is list:
        return f"list of {_type_name(args[0])}"
    if origin is dict:
        return f"table of {_type_name(args[1])}"
    if args and type(None) in args:
        return f"{_type_name(next(a for a in args if a is not type(None)))} (optional)"
    if tp is timedelta:
        return "duration"
    if tp is Decimal:
        return "decimal number"
    if tp is LocalText:
        return "text (str, or table of language -> str)"
    if isinstance(tp, type) and issubclass(tp, Enum):
        return " or ".join(repr(m.value) for m in tp)
    if dataclasses.is_dataclass(tp):
        return "table"
    return getattr(tp, "__name__", str(tp))


def _default(f: dataclasses.Field[Any]) -> str:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return "required"
    if isinstance(value, timedelta):
        return format_duration(value)
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, LocalText):
        return repr(value.default)
    if dataclasses.is_dataclass(value):
        return ""
    return repr(value)


def _walk(tp: Any, prefix: str) -> Iterator[FieldDoc]:
    hints = typing.get_type_hints(tp)
    for f in dataclasses.fields(tp):
        if f.metadata.get("internal"):
            continue
        key = FIELD_ALIASES.get(f.name, f.name)
        path = f"{prefix}.{key}" if prefix else key
        hint = hints[f.name]
        yield FieldDoc(path, _type_name(hint), _default(f), str(f.metadata.get("help", "")))
        yield from _nested(hint, path)


def _nested(hint: Any, path: str) -> Iterator[FieldDoc]:
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if hint is LocalText:
        return
    if dataclasses.is_dataclass(hint):
        yield from _walk(hint, path)
    elif origin is list and dataclasses.is_dataclass(args[0]):
        yield from _walk(args[0], f"{path}[]")
    elif origin is dict and dataclasses.is_dataclass(args[1]):
        yield from _walk(args[1], f"{path}.<name>")


def field_reference() -> list[FieldDoc]:
    return list(_walk(Config, ""))


def render_markdown_table() -> str:
    lines = ["| field | type | default | meaning |", "|---|---|---|---|"]
    for doc in field_reference():
        default = f"`{doc.default}`" if doc.default not in ("", "required") else doc.default
        lines.append(f"| `{doc.path}` | {doc.type} | {default} | {doc.help} |")
    return "\n".join(lines) + "\n"


def indicator_table() -> str:
    lines = ["| indicator | unit | meets its objective when | scenarios | meaning |", "|---|---|---|---|---|"]
    for i in INDICATORS.values():
        when = "value <= threshold" if i.direction.value == "at_most" else "value >= threshold"
        scenarios = ", ".join(sorted(s.value for s in i.scenarios))
        lines.append(f"| `{i.name}` | {i.unit.value} | {when} | {scenarios} | {i.help} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    # Prints the two generated tables of docs/config.md, to paste after a schema change.
    print(render_markdown_table())
    print(indicator_table())
