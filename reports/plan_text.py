"""A quota plan item's reason, evidence and expected effect as catalogue messages, stored as JSON.

The plan is data (stored, approved, applied months later), so its texts are stored as catalogue keys
with typed parameters, never as sentences in one language; each reader writes them in its own:

    [{"key": "quota.reason.raise", "params": {"team": {"t": "nlp"}, "wait": {"q": 3600, "kind": "duration"}}}]

`{"t": ...}` is verbatim text (names); `{"q": ..., "kind": ...}` a reports.model.Quantity. A text that
is not such a list (a plan stored before this format) reads as one verbatim text.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, cast

from reports.locale import Formatter
from reports.model import Cell, Message, Phrases, Quantity, QuantityKind, Text


def _param(cell: Cell) -> dict[str, Any]:
    if isinstance(cell, Quantity):
        return {"q": cell.value, "kind": cell.kind}
    if isinstance(cell, Text):
        return {"t": cell.value}
    raise TypeError(f"a stored plan message takes text and quantities, not {type(cell).__name__}")


def encode(messages: Sequence[Message]) -> str:
    """The messages as stored in a plan item's reason, evidence or expected_effect."""
    return json.dumps(
        [{"key": m.key, "params": {name: _param(c) for name, c in m.params}} for m in messages],
        ensure_ascii=False, separators=(",", ":"),
    )


def decode(text: str | None) -> tuple[Message, ...]:
    """The stored messages; an older plan's plain text becomes one `quota.verbatim` message."""
    if not text:
        return ()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if not isinstance(data, list) or not all(isinstance(d, dict) and "key" in d for d in data):
        return (Message("quota.verbatim", (("text", Text(text)),)),)
    out = []
    for d in data:
        params: list[tuple[str, Cell]] = []
        for name, value in dict(d.get("params") or {}).items():
            if "q" in value:
                params.append((name, Quantity(value["q"], cast(QuantityKind, value["kind"]))))
            else:
                params.append((name, Text(str(value.get("t", "")))))
        out.append(Message(str(d["key"]), tuple(params)))
    return tuple(out)


def phrases(text: str | None, separator: str = "sentence") -> Phrases:
    return Phrases(decode(text), "list" if separator == "list" else "sentence")


def render(text: str | None, formatter: Formatter, separator: str = "sentence") -> str:
    """The stored messages written in the formatter's language."""
    return formatter.cell(phrases(text, separator))
